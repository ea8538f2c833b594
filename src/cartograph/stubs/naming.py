"""Turning upstream names into valid, collision-free Python identifiers.

Upstream names are whatever a publisher chose: ``get-weather``, ``from``,
``9to5mac``, ``鸣潮 MCP Server``. Generated code needs ASCII identifiers that
are not keywords, do not shadow the names the generated code itself uses, and
stay distinct after cleaning. A :class:`Namespace` hands out such names in a
caller-chosen (deterministic) order, so the same inputs always get the same
names.
"""

from __future__ import annotations

import hashlib
import keyword
import re
import unicodedata
from collections.abc import Iterable
from typing import Final

_NOT_WORD: Final = re.compile(r"[^0-9A-Za-z_]+")
_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_HASH_CHARS: Final = 8


def ascii_words(name: str) -> list[str]:
    """The ASCII word pieces of ``name`` (accents folded, other scripts dropped)."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return [w for w in _NOT_WORD.split(folded.replace("_", " ")) if w]


def _fallback(name: str, prefix: str) -> str:
    """A stable name for input with no ASCII letters at all (e.g. all CJK)."""
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    return f"{prefix}_{digest}"


def identifier(name: str, *, prefix: str = "x") -> str:
    """``name`` as an identifier, keeping its case: ``get-weather`` → ``get_weather``.

    Leading underscores are dropped (they would make the name private), a
    leading digit gets ``prefix`` in front, keywords get a trailing ``_``.
    """
    words = ascii_words(name)
    if not words:
        return _fallback(name, prefix)
    candidate = "_".join(words)
    if candidate[0].isdigit():
        candidate = f"{prefix}_{candidate}"
    if keyword.iskeyword(candidate):
        candidate += "_"
    return candidate


def module_name(name: str) -> str:
    """A lower-case module name for a server: ``MCP Yahoo Finance`` → ``mcp_yahoo_finance``."""
    return identifier("_".join(ascii_words(name)).lower() or name, prefix="server")


def class_name(*parts: str) -> str:
    """CamelCase from name pieces: (``get_weather``, ``location``) → ``GetWeatherLocation``."""
    words: list[str] = []
    for part in parts:
        for word in ascii_words(part):
            words.extend(_CAMEL_BOUNDARY.split(word))
    joined = "".join(w[:1].upper() + w[1:] for w in words if w)
    if not joined:
        return _fallback("".join(parts), "Type")
    return joined if not joined[0].isdigit() else f"T{joined}"


class Namespace:
    """Allocates distinct names in one scope, avoiding a reserved set.

    A taken or reserved name gets the first free ``_2``, ``_3``, … suffix, so
    the allocation is deterministic for a deterministic call order.
    """

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._taken: set[str] = set(reserved)

    def claim(self, wanted: str) -> str:
        name = wanted
        suffix = 2
        while name in self._taken:
            name = f"{wanted}_{suffix}"
            suffix += 1
        self._taken.add(name)
        return name

    def __contains__(self, name: object) -> bool:
        return name in self._taken
