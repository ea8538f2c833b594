"""Bearer tokens mapped to principals, each scoped to a set of catalogs.

Tokens never live in the config file: each ``[[http.tokens]]`` entry names
the environment variable that holds it. The authority fails closed
(P-AUTH-2): a configured token whose variable is unset or empty is a fatal
start-up error rather than a silently open door; with any token configured,
a request without a valid one is refused; a principal outside a catalog's
scope is refused there, through every mount.

One token, one principal, one scope (P-AUTH-4): two entries naming the same
principal, or presenting the same token, are refused when the authority is
built, so the per-call decision (which looks a principal up by name) can only
ever find the scope written for that principal, on every mount.

Only a SHA-256 digest of each token is kept in memory and compared in
constant time, so no token value can leak into logs, errors or ``status``
(P-LOG-1).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from cartograph import error_codes as codes
from cartograph.config.model import (
    HttpConfig,
    TokenConfig,
    check_token_entries,
    token_entry_label,
)
from cartograph.errors import AuthenticationError, ConfigError, PolicyError

ANY_CATALOG: Final = "*"
BEARER_PREFIX: Final = "bearer "


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts for, and which catalogs it may touch."""

    name: str
    catalogs: frozenset[str]

    def can_reach(self, catalog: str) -> bool:
        return ANY_CATALOG in self.catalogs or catalog in self.catalogs

    def reachable(self, catalogs: Iterable[str]) -> tuple[str, ...]:
        return tuple(c for c in catalogs if self.can_reach(c))


ANONYMOUS: Final = Principal(name="anonymous", catalogs=frozenset({ANY_CATALOG}))
"""The principal of a loopback server with no tokens configured: it reaches everything."""


@dataclass(frozen=True, slots=True)
class _Entry:
    digest: bytes
    principal: Principal
    label: str


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenAuthority:
    """Authenticates bearer tokens and decides catalog access for principals."""

    def __init__(
        self,
        entries: Iterable[tuple[str, Principal]] = (),
        *,
        labels: Sequence[str] | None = None,
    ) -> None:
        """``labels`` name the entries in errors (default: their position); raises ConfigError."""
        listed = list(entries)
        names = (
            labels if labels is not None else [f"token entry #{i + 1}" for i in range(len(listed))]
        )
        self._entries = tuple(
            _Entry(_digest(token), principal, label)
            for (token, principal), label in zip(listed, names, strict=True)
        )
        self._principals = _unique_principals(self._entries)

    @classmethod
    def from_config(
        cls, http: HttpConfig, environ: Mapping[str, str] | None = None
    ) -> TokenAuthority:
        """Read every configured token from its environment variable; raises ConfigError."""
        env = os.environ if environ is None else environ
        check_token_entries(http.tokens)
        return cls(
            (_load_token(t, env) for t in http.tokens),
            labels=[token_entry_label(i, t) for i, t in enumerate(http.tokens)],
        )

    @property
    def enabled(self) -> bool:
        """True when at least one token is configured: then every request needs one."""
        return bool(self._entries)

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal behind an ``Authorization`` header value; raises AuthenticationError."""
        if not self.enabled:
            return ANONYMOUS
        if not authorization or not authorization.lower().startswith(BEARER_PREFIX):
            raise AuthenticationError(
                "this server requires 'Authorization: Bearer <token>'.", code=codes.UNAUTHENTICATED
            )
        presented = _digest(authorization[len(BEARER_PREFIX) :].strip())
        match: Principal | None = None
        for entry in self._entries:  # no early exit: time does not depend on which entry matched
            if hmac.compare_digest(entry.digest, presented):
                match = entry.principal
        if match is None:
            raise AuthenticationError("the bearer token is not valid here.", code=codes.BAD_TOKEN)
        return match

    def principal(self, name: str | None) -> Principal | None:
        """The configured principal called ``name`` (``ANONYMOUS`` when auth is off)."""
        if not self.enabled:
            return ANONYMOUS
        return self._principals.get(name) if name is not None else None

    def reaches_all(self, catalogs: Iterable[str]) -> bool:
        """Whether every configured principal reaches every one of ``catalogs`` (or auth is off)."""
        wanted = tuple(catalogs)
        return all(len(p.reachable(wanted)) == len(wanted) for p in self._principals.values())

    def authorize(self, principal: str | None, catalog: str, tool: str) -> None:
        """The per-call decision ProxyHandlers makes; raises PolicyError. Fails closed."""
        found = self.principal(principal)
        if found is None:
            raise AuthenticationError(
                f"a call to {tool!r} in catalog {catalog!r} carried no known principal.",
                code=codes.UNAUTHENTICATED,
            )
        if not found.can_reach(catalog):
            raise PolicyError(
                f"principal {found.name!r} is not scoped to catalog {catalog!r} (tool {tool!r}); "
                "add the catalog to that token's 'catalogs' in [[http.tokens]].",
                code=codes.CATALOG_FORBIDDEN,
                principal=found.name,
                catalog=catalog,
            )


def _unique_principals(entries: Sequence[_Entry]) -> dict[str, Principal]:
    """Principals by name; two entries sharing a name or a token value are refused (P-AUTH-4).

    A shared name would make the per-call check use whichever entry came last,
    whatever scope the presented token was written with; a shared token value
    would make the principal depend on entry order. Both name the two entries,
    never the token.
    """
    _refuse_repeats(entries, lambda e: e.digest, codes.DUPLICATE_TOKEN, "token value")
    _refuse_repeats(
        entries, lambda e: e.principal.name, codes.DUPLICATE_PRINCIPAL, "principal name"
    )
    return {entry.principal.name: entry.principal for entry in entries}


def _refuse_repeats(
    entries: Sequence[_Entry], key: Callable[[_Entry], Hashable], code: str, what: str
) -> None:
    seen: dict[Hashable, _Entry] = {}
    for entry in entries:
        first = seen.setdefault(key(entry), entry)
        if first is not entry:
            raise ConfigError(
                f"{entry.label} repeats the {what} of {first.label}: one token, one "
                "principal, one scope; merge the two entries' catalogs into one entry.",
                code=code,
                key="http.tokens",
            )


def _load_token(cfg: TokenConfig, env: Mapping[str, str]) -> tuple[str, Principal]:
    value = env.get(cfg.token_env, "")
    if not value.strip():
        raise ConfigError(
            f"the token for principal {cfg.principal!r} is read from ${cfg.token_env}, which is "
            "unset or empty; export it or remove that [[http.tokens]] entry.",
            code=codes.TOKEN_ENV_MISSING,
        )
    return value.strip(), Principal(cfg.principal, frozenset(cfg.catalogs))
