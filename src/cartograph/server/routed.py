"""The routed mount: one tool surface for several catalogs, the catalog as an argument (D187).

A client that adds N catalogs as N entries pays N copies of the same tool
schemas on every model round-trip. The routed mount serves the union of the
catalogs' tools once, and every tool gains a ``catalog`` argument:

* the property is injected at exactly one point, :func:`with_catalog_property`,
  when the descriptor list is assembled, so no schema literal anywhere can drift
  from it;
* it is required whenever 2+ catalogs are routed (a missing ``catalog`` is an
  error naming them), optional with exactly one, never inferred, no default;
* the exposed set is the union; a call naming a catalog whose policy gates the
  tool off is refused by that catalog (which audits it) and the routed view
  names the tool, the catalog and the config key;
* once ``catalog`` is resolved the call goes into that catalog's own
  :class:`ToolSurface` (its ``ProxyHandlers``), the same path its per-catalog
  endpoint uses, so exactly one authorization decision and one audit record
  happen, at the target, naming the real catalog. This class authorizes
  nothing and audits nothing itself.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from mcp.types import CallToolResult, Tool

from cartograph.errors import CallError, ConfigError, PolicyError
from cartograph.gateway.results import error_code, error_result
from cartograph.server.handlers import ToolSurface

CATALOG_ARGUMENT: Final = "catalog"
UNKNOWN_TOOL_CODES: Final = frozenset({"unknown_proxy_tool", "unknown_tool"})
"""Codes a target uses for "no such tool here"; the routed view adds which key gates it."""

__all__ = [
    "CATALOG_ARGUMENT",
    "RoutedHandlers",
    "ToolSurface",
    "policy_key",
    "with_catalog_property",
]


def with_catalog_property(tool: Tool, catalogs: Sequence[str], *, required: bool) -> Tool:
    """``tool`` with a ``catalog`` property added to its input schema: THE injection point."""
    schema = copy.deepcopy(tool.input_schema)
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    if CATALOG_ARGUMENT in properties:
        raise ConfigError(
            f"tool {tool.name!r} already has a {CATALOG_ARGUMENT!r} argument, so it cannot be "
            "served on the routed mount; turn routing off (http.mount_mode).",
            code="routed_argument_clash",
        )
    properties[CATALOG_ARGUMENT] = _catalog_property(catalogs, required=required)
    schema["properties"] = properties
    if required:
        schema["required"] = [*schema.get("required", []), CATALOG_ARGUMENT]
    return tool.model_copy(update={"input_schema": schema})


def _catalog_property(catalogs: Sequence[str], *, required: bool) -> dict[str, Any]:
    """Short on purpose: it is repeated in every tool, and the enum already names the values."""
    return {"type": "string", "enum": list(catalogs), "description": "Catalog to act in."}


def policy_key(catalog: str) -> str:
    """The config key that decides which proxy tools ``catalog`` exposes."""
    return f'catalogs[name="{catalog}"].policy.proxy_tools'


class RoutedHandlers:
    """A :class:`ToolSurface` over several catalogs' own surfaces (built without prefix)."""

    def __init__(self, targets: Mapping[str, ToolSurface]) -> None:
        if not targets:
            raise ConfigError("the routed mount needs at least one catalog.", code="no_catalogs")
        self._targets = dict(targets)
        self._names = tuple(self._targets)

    @property
    def catalogs(self) -> tuple[str, ...]:
        return self._names

    @property
    def catalog_required(self) -> bool:
        return len(self._names) > 1

    def exposed(self) -> dict[str, tuple[str, ...]]:
        """Each catalog's tool names, as its own policy exposes them."""
        return {name: tuple(t.name for t in s.list_tools()) for name, s in self._targets.items()}

    def list_tools(self) -> list[Tool]:
        """The union of the catalogs' tools, first descriptor wins, each with ``catalog``."""
        union: dict[str, Tool] = {}
        for surface in self._targets.values():
            for tool in surface.list_tools():
                union.setdefault(tool.name, tool)
        required = self.catalog_required
        return [with_catalog_property(t, self._names, required=required) for t in union.values()]

    async def release_client(self, client: str) -> None:
        """A routed-mount session ended: every catalog closes that client's upstream sessions."""
        for surface in self._targets.values():
            release = getattr(surface, "release_client", None)
            if release is not None:
                await release(client)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, principal: str | None
    ) -> CallToolResult:
        """Resolve ``catalog``, then hand the call to that catalog's own surface."""
        rest = dict(arguments)
        catalog = self._resolve_catalog(rest.pop(CATALOG_ARGUMENT, None), name)
        result = await self._targets[catalog].call_tool(name, rest, principal=principal)
        if error_code(result) in UNKNOWN_TOOL_CODES:
            return self._explain_unknown(name, catalog, result)
        return result

    def _resolve_catalog(self, value: object, tool: str) -> str:
        if value is None and not self.catalog_required:
            return self._names[0]
        if value is None:
            raise CallError(
                f"{tool!r} needs a {CATALOG_ARGUMENT!r} argument on this server: one of "
                f"{', '.join(self._names)}.",
                code="catalog_required",
                catalogs=list(self._names),
            )
        if not isinstance(value, str) or value not in self._targets:
            raise CallError(
                f"{CATALOG_ARGUMENT}={value!r} is not served here; use one of "
                f"{', '.join(self._names)}.",
                code="unknown_catalog",
                catalogs=list(self._names),
            )
        return value

    def _explain_unknown(self, tool: str, catalog: str, refusal: CallToolResult) -> CallToolResult:
        """The target refused (and audited) a tool it does not expose; name the key that gates it.

        The union lists ``tool`` because a sibling exposes it, so "unknown tool"
        would mislead: the agent needs the catalog and the operator the config key.
        """
        offering = [c for c, tools in self.exposed().items() if tool in tools]
        if not offering:
            return refusal
        key = policy_key(catalog)
        return error_result(
            PolicyError(
                f"tool {tool!r} is not exposed by catalog {catalog!r} (config key {key}); "
                f"catalogs that expose it: {', '.join(offering)}.",
                code="tool_not_exposed",
                tool=tool,
                catalog=catalog,
                key=key,
            )
        )

    def instructions(self) -> str:
        """What the agent reads: the bare tool names and the ``catalog`` value to pass."""
        exposed = self.exposed()
        lines = [
            f"Cartograph serves {len(self._names)} catalog(s) through one set of tools. "
            + (
                f"Every tool takes a required `{CATALOG_ARGUMENT}` argument naming the catalog "
                "to act in; it is never guessed."
                if self.catalog_required
                else f"Tools accept an optional `{CATALOG_ARGUMENT}` argument "
                f'(the only value is "{self._names[0]}").'
            ),
        ]
        for name, tools in exposed.items():
            lines.append(f'- {CATALOG_ARGUMENT}="{name}": {", ".join(tools) or "(no tools)"}')
        if any("discover" in tools for tools in exposed.values()):
            lines.append(
                "Find a tool with `discover` in a catalog, then run it with `call` "
                "passing the same catalog."
            )
        return "\n".join(lines)
