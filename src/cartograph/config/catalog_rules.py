"""What docs/decisions/0001 forbids in a catalog declaration, checked on plain values.

These rules hold for every :class:`~cartograph.config.model.Config`, so the
model's validator runs them; :mod:`cartograph.config.catalogs` runs them again
with the effective mount mode (flag or env var) when it resolves catalogs to
serve. They take names and strings, not models, so that this module sits
below :mod:`cartograph.config.model` and the two never import each other.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Final, Literal, get_args

from cartograph import error_codes as codes
from cartograph.errors import ConfigError

MountMode = Literal["per-catalog", "routed"]
MOUNT_MODES: Final[tuple[str, ...]] = get_args(MountMode)
DEFAULT_CATALOG_NAME: Final = "default"
ROUTED_NAME: Final = "routed"
CATALOG_NAME_PATTERN: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
TOOL_PREFIX_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")


def check_catalog_names(names: Iterable[str], mount_mode: MountMode) -> None:
    """Names are URL-safe and unique; ``routed`` is refused while routing is on."""
    seen: set[str] = set()
    for name in names:
        if not CATALOG_NAME_PATTERN.fullmatch(name):
            raise ConfigError(
                f"catalog name {name!r} is not usable in a URL path; use lower-case letters, "
                "digits, '-' and '_' (at most 63 characters).",
                code=codes.BAD_CATALOG_NAME,
            )
        if name in seen:
            raise ConfigError(f"catalog {name!r} is declared twice.", code=codes.DUPLICATE_CATALOG)
        seen.add(name)
        if mount_mode == "routed" and name == ROUTED_NAME:
            raise ConfigError(
                f'catalog "{ROUTED_NAME}" collides with the routed mount\'s own path /mcp/routed; '
                f'rename it (catalogs[name="{ROUTED_NAME}"].name) or turn routing off.',
                code=codes.CATALOG_NAME_RESERVED,
            )


def check_explicit_prefix(catalog: str, tool_prefix: str, mount_mode: MountMode) -> None:
    """An operator's ``tool_prefix`` is refused under routing and must be a valid prefix."""
    key = f'catalogs[name="{catalog}"].tool_prefix'
    if mount_mode == "routed":
        raise ConfigError(
            f"catalog {catalog!r} sets {key} = {tool_prefix!r}, but routing is on and the "
            f"routed mount serves bare tool names; remove {key} or set http.mount_mode = "
            '"per-catalog".',
            code=codes.PREFIX_WITH_ROUTING,
            catalog=catalog,
            key=key,
        )
    if not TOOL_PREFIX_PATTERN.fullmatch(tool_prefix):
        raise ConfigError(
            f"{key} = {tool_prefix!r} is not a valid tool-name prefix; use 1-32 of "
            "A-Z a-z 0-9 _ . -",
            code=codes.BAD_TOOL_PREFIX,
        )


def check_members(catalog: str, members: Iterable[str], servers: Collection[str]) -> None:
    """Every server a catalog names is a configured server."""
    for name in members:
        if name not in servers:
            raise ConfigError(
                f'catalogs[name="{catalog}"].servers names {name!r}, which is not a configured '
                "server; add it as [servers.NAME] or remove it from the catalog.",
                code=codes.UNKNOWN_CATALOG_SERVER,
            )


__all__ = [
    "CATALOG_NAME_PATTERN",
    "DEFAULT_CATALOG_NAME",
    "MOUNT_MODES",
    "ROUTED_NAME",
    "TOOL_PREFIX_PATTERN",
    "MountMode",
    "check_catalog_names",
    "check_explicit_prefix",
    "check_members",
]
