"""Catalogs as served: names, members, prefixes and the mount mode (design record D187).

A config names zero or more catalogs; each is a federation of its own served
at ``/mcp/<name>``. With none configured, one implicit catalog called
``default`` holds every enabled server. This module turns the config plus the
effective mount mode into :class:`ResolvedCatalog` values and refuses, with a
message naming the catalog and the key, every combination D187 forbids:

* an explicit ``tool_prefix`` while routing is on (it contradicts the request
  to route: the routed mount exists to shrink names, not re-inflate them);
* a catalog named ``routed`` while routing is on (it would shadow the
  routed mount's own path).

The *derived* default prefix (2+ catalogs) is different: the operator never
asked for it, so under routing it is simply not applied on the routed mount,
and it stays on the per-catalog endpoints so their ``tools/list`` does not
change when routing is switched on.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, get_args

from cartograph.config.model import CatalogConfig, CatalogPolicy, Config, ServerConfig
from cartograph.errors import ConfigError

MountMode = Literal["per-catalog", "routed"]
MOUNT_MODES: Final[tuple[str, ...]] = get_args(MountMode)
MOUNT_MODE_ENV: Final = "CARTOGRAPH_MOUNT_MODE"
DEFAULT_CATALOG_NAME: Final = "default"
ROUTED_NAME: Final = "routed"
CATALOG_NAME_PATTERN: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
TOOL_PREFIX_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")

PrefixSource = Literal["explicit", "derived"]


@dataclass(frozen=True, slots=True)
class ResolvedCatalog:
    """One catalog ready to serve.

    ``tool_prefix`` is what its per-catalog endpoint uses; the routed mount
    never uses a prefix. ``prefix_source`` says who asked for it.
    """

    name: str
    servers: tuple[ServerConfig, ...]
    policy: CatalogPolicy
    tool_prefix: str | None
    prefix_source: PrefixSource | None


def resolve_mount_mode(
    flag: str | None, config: Config, environ: Mapping[str, str] | None = None
) -> MountMode:
    """The effective mount mode: ``--mount-mode`` beats the env var beats the config."""
    env = os.environ if environ is None else environ
    for source, value in (("--mount-mode", flag), (MOUNT_MODE_ENV, env.get(MOUNT_MODE_ENV))):
        if value:
            return _checked_mode(value, source)
    return config.http.mount_mode


def _checked_mode(value: str, source: str) -> MountMode:
    if value == "routed":
        return "routed"
    if value == "per-catalog":
        return "per-catalog"
    raise ConfigError(
        f"{source}={value!r} is not a mount mode; use one of: {', '.join(MOUNT_MODES)}.",
        code="bad_mount_mode",
    )


def derived_prefix(name: str) -> str:
    """The default prefix for catalog ``name`` when 2+ catalogs share one client."""
    return name.replace("-", "_") + "_"


def resolve_catalogs(config: Config, mount_mode: MountMode) -> tuple[ResolvedCatalog, ...]:
    """Every catalog to serve, validated against ``mount_mode``; raises ConfigError."""
    declared = config.catalogs or (CatalogConfig(name=DEFAULT_CATALOG_NAME),)
    check_catalog_names(declared, mount_mode)
    many = len(declared) > 1
    return tuple(_resolve_one(config, cat, many=many, mount_mode=mount_mode) for cat in declared)


def check_catalog_names(catalogs: tuple[CatalogConfig, ...], mount_mode: MountMode) -> None:
    """Names are URL-safe and unique; ``routed`` is refused while routing is on."""
    seen: set[str] = set()
    for cat in catalogs:
        if not CATALOG_NAME_PATTERN.fullmatch(cat.name):
            raise ConfigError(
                f"catalog name {cat.name!r} is not usable in a URL path; use lower-case letters, "
                "digits, '-' and '_' (at most 63 characters).",
                code="bad_catalog_name",
            )
        if cat.name in seen:
            raise ConfigError(f"catalog {cat.name!r} is declared twice.", code="duplicate_catalog")
        seen.add(cat.name)
        if mount_mode == "routed" and cat.name == ROUTED_NAME:
            raise ConfigError(
                f'catalog "{ROUTED_NAME}" collides with the routed mount\'s own path /mcp/routed; '
                f'rename it (catalogs[name="{ROUTED_NAME}"].name) or turn routing off.',
                code="catalog_name_reserved",
            )


def _resolve_one(
    config: Config, cat: CatalogConfig, *, many: bool, mount_mode: MountMode
) -> ResolvedCatalog:
    servers = _members(config, cat)
    if cat.tool_prefix is not None:
        _check_explicit_prefix(cat, mount_mode)
        return ResolvedCatalog(cat.name, servers, cat.policy, cat.tool_prefix, "explicit")
    if many:
        return ResolvedCatalog(cat.name, servers, cat.policy, derived_prefix(cat.name), "derived")
    return ResolvedCatalog(cat.name, servers, cat.policy, None, None)


def _check_explicit_prefix(cat: CatalogConfig, mount_mode: MountMode) -> None:
    key = f'catalogs[name="{cat.name}"].tool_prefix'
    if mount_mode == "routed":
        raise ConfigError(
            f"catalog {cat.name!r} sets {key} = {cat.tool_prefix!r}, but routing is on and the "
            f"routed mount serves bare tool names; remove {key} or set http.mount_mode = "
            '"per-catalog".',
            code="prefix_with_routing",
            catalog=cat.name,
            key=key,
        )
    if cat.tool_prefix is not None and not TOOL_PREFIX_PATTERN.fullmatch(cat.tool_prefix):
        raise ConfigError(
            f"{key} = {cat.tool_prefix!r} is not a valid tool-name prefix; use 1-32 of "
            "A-Z a-z 0-9 _ . -",
            code="bad_tool_prefix",
        )


def _members(config: Config, cat: CatalogConfig) -> tuple[ServerConfig, ...]:
    """The enabled servers of ``cat``; an empty ``servers`` list means all of them."""
    if not cat.servers:
        return config.enabled_servers
    members: list[ServerConfig] = []
    for name in cat.servers:
        server = config.server(name)
        if server is None:
            raise ConfigError(
                f'catalogs[name="{cat.name}"].servers names {name!r}, which is not a configured '
                "server; add it as [servers.NAME] or remove it from the catalog.",
                code="unknown_catalog_server",
            )
        if server.enabled:
            members.append(server)
    return tuple(members)
