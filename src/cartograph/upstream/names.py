"""Name hygiene for a federation (P-NAME-1).

Two names that a person (or a model) would read as the same name must not
address two different things: ``get-file``, ``get_file``, ``getFile``,
``GET FILE`` and a full-width ``ｇｅｔ＿ｆｉｌｅ`` are one name. Such
collisions — between servers, between tools of one server, or with one of
Cartograph's own proxy tools — are rejected at load and at reload with a
message that names both sources.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from cartograph.catalog.model import Catalog, ServerDef
from cartograph.config.model import PROXY_TOOL_NAMES
from cartograph.errors import NameCollisionError

# Separators that do not make a name different: hyphen, underscore, dot,
# whitespace. (camelCase boundaries vanish with case folding.)
_SEPARATORS: Final = re.compile(r"[\s\-_.]+")


def normalise_name(name: str) -> str:
    """The comparison key of a name: NFKC, case-folded, separators removed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return _SEPARATORS.sub("", folded)


@dataclass(frozen=True)
class NamedThing:
    """A name and where it came from, for messages (``"server 'git' (demo.toml)"``)."""

    name: str
    source: str


def find_collision(
    things: Iterable[NamedThing], *, reserved: Iterable[str] = PROXY_TOOL_NAMES
) -> tuple[NamedThing, NamedThing] | None:
    """The first pair that collides after normalisation, reserved names first in line."""
    seen: dict[str, NamedThing] = {
        normalise_name(word): NamedThing(word, f"Cartograph's proxy tool {word!r}")
        for word in reserved
    }
    for thing in things:
        key = normalise_name(thing.name)
        if key in seen:
            return seen[key], thing
        seen[key] = thing
    return None


def check_names(
    things: Iterable[NamedThing], *, reserved: Iterable[str] = PROXY_TOOL_NAMES
) -> None:
    """Raise :class:`NameCollisionError` naming both sources of the first collision."""
    pair = find_collision(things, reserved=reserved)
    if pair is None:
        return
    first, second = pair
    reserved_hit = first.source.startswith("Cartograph's proxy tool")
    raise NameCollisionError(
        f"{second.source} collides with {first.source} after normalisation "
        f"({normalise_name(second.name)!r}); rename one of them",
        code="name_reserved" if reserved_hit else "name_collision",
        first=first.source,
        second=second.source,
    )


def check_tool_names(server: ServerDef) -> None:
    """A server's tools must be distinct from each other and from the proxy tools."""
    check_names(
        NamedThing(tool.name, f"tool {tool.name!r} of server {server.name!r}")
        for tool in server.tools
    )


def check_catalog_names(catalog: Catalog) -> None:
    """Server names across the catalog, then tool names within each server."""
    check_names(NamedThing(server.name, f"server {server.name!r}") for server in catalog.servers)
    for server in catalog.servers:
        check_tool_names(server)


__all__ = [
    "NamedThing",
    "check_catalog_names",
    "check_names",
    "check_tool_names",
    "find_collision",
    "normalise_name",
]
