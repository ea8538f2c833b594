"""Catalogs as served: names, members, prefixes and the mount mode (docs/decisions/0001).

A config names zero or more catalogs; each is a federation of its own served
at ``/mcp/<name>``. With none configured, one implicit catalog called
``default`` holds every enabled server. This module turns the config plus the
effective mount mode into :class:`ResolvedCatalog` values and refuses, with a
message naming the catalog and the key, every combination the decision forbids:

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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from cartograph import error_codes as codes
from cartograph.config.catalog_rules import (
    DEFAULT_CATALOG_NAME,
    MOUNT_MODES,
    MountMode,
    check_catalog_names,
    check_explicit_prefix,
    check_members,
)
from cartograph.config.model import (
    CatalogConfig,
    CatalogPolicy,
    CodeModeConfig,
    Config,
    ServerConfig,
    deny_disabled_tools,
)
from cartograph.errors import ConfigError

MOUNT_MODE_ENV: Final = "CARTOGRAPH_MOUNT_MODE"
CODE_MODE_OFF: Final = CodeModeConfig()

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
    code_mode: CodeModeConfig = CODE_MODE_OFF
    """Its ``[code_mode]`` (``Config.code_mode_for``): whether it lists ``run``."""


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
        code=codes.BAD_MOUNT_MODE,
    )


def derived_prefix(name: str) -> str:
    """The default prefix for catalog ``name`` when 2+ catalogs share one client."""
    return name.replace("-", "_") + "_"


def resolve_catalogs(config: Config, mount_mode: MountMode) -> tuple[ResolvedCatalog, ...]:
    """Every catalog to serve, validated against ``mount_mode``; raises ConfigError."""
    declared = config.catalogs or (CatalogConfig(name=DEFAULT_CATALOG_NAME),)
    check_catalog_names((cat.name for cat in declared), mount_mode)
    many = len(declared) > 1
    return tuple(_resolve_one(config, cat, many=many, mount_mode=mount_mode) for cat in declared)


def _resolve_one(
    config: Config, cat: CatalogConfig, *, many: bool, mount_mode: MountMode
) -> ResolvedCatalog:
    servers = _members(config, cat)
    policy = deny_disabled_tools(cat.policy, servers)  # a client's disabledTools stay disabled
    code = config.code_mode_for(cat.name)
    if cat.tool_prefix is not None:
        check_explicit_prefix(cat.name, cat.tool_prefix, mount_mode)
        return ResolvedCatalog(cat.name, servers, policy, cat.tool_prefix, "explicit", code)
    if many:
        return ResolvedCatalog(cat.name, servers, policy, derived_prefix(cat.name), "derived", code)
    return ResolvedCatalog(cat.name, servers, policy, None, None, code)


def _members(config: Config, cat: CatalogConfig) -> tuple[ServerConfig, ...]:
    """The enabled servers of ``cat``; an empty ``servers`` list means all of them."""
    if not cat.servers:
        return config.enabled_servers
    check_members(cat.name, cat.servers, {s.name for s in config.servers})
    return tuple(s for name in cat.servers if (s := config.server(name)) and s.enabled)
