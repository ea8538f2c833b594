"""Which configured values are secrets: what every redactor removes (P-LOG-1).

Redacting *every* upstream env value blanked harmless words wherever they
appeared: with ``MODE = "stdio"`` in some server's env, ``status`` printed
``"transport": "[redacted]"`` for every stdio server. A value is secret when
what holds it says so:

* an env variable whose name contains ``TOKEN``, ``KEY``, ``SECRET``,
  ``PASSWORD``/``PASSWD``/``PASS``, ``AUTH``, ``CREDENTIAL``, ``COOKIE``,
  ``SESSION``, ``PRIVATE`` or ``DSN`` (case-insensitive), or one the server lists
  in ``secret_env``;
* any env value that is a URL carrying a password (``scheme://user:pass@host``);
* every header value, and the credential part of ``Bearer …``/``Basic …``.

An upstream OAuth client's secret (``oauth.client_secret_env`` / ``_file``) is one too.
Tokens of ``[[http.tokens]]`` and the LLM API key are added by the redactor,
which reads them from the environment, and so are the stored upstream OAuth
tokens, which it reads from the token stores whenever they change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

MASK: Final = "***"
"""What a repr shows instead of a secret value."""

SECRET_NAME_PARTS: Final = (
    "TOKEN",
    "KEY",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "AUTH",
    "CREDENTIAL",
    "COOKIE",
    "SESSION",
    "PRIVATE",
    "DSN",
)
_URL_WITH_PASSWORD: Final = re.compile(r"://[^/@\s:]*:[^/@\s]+@")
_URL_PASSWORD: Final = re.compile(r"(://[^/@\s:]*:)[^/@\s]+@")


def is_secret_name(name: str) -> bool:
    """Whether an env variable or header called ``name`` holds a secret by its name."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def secret_env_values(env: Mapping[str, str], declared: Iterable[str] = ()) -> Iterator[str]:
    """The values of ``env`` that are secrets (see the module docstring)."""
    listed = set(declared)
    for name, value in env.items():
        if name in listed or is_secret_name(name) or _URL_WITH_PASSWORD.search(value):
            yield value


def header_secrets(headers: Mapping[str, str]) -> Iterator[str]:
    """Every header value, and ``abc`` of ``Bearer abc`` (it leaks on its own too)."""
    for value in headers.values():
        yield value
        _, _, credential = value.partition(" ")
        if credential:
            yield credential


def masked_env(env: Mapping[str, str], declared: Iterable[str] = ()) -> dict[str, str]:
    """``env`` for a repr: each secret value (see the module docstring) replaced by :data:`MASK`."""
    secret = set(secret_env_values(env, declared))
    return {name: MASK if value in secret else value for name, value in env.items()}


def masked_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` for a repr: every value is a secret."""
    return dict.fromkeys(headers, MASK)


def masked_url(url: str) -> str:
    """``url`` for a repr, its password (``scheme://user:PASSWORD@host``) masked."""
    return _URL_PASSWORD.sub(rf"\g<1>{MASK}@", url)
