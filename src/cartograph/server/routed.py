"""The routed mount: one tool surface for several catalogs, the catalog as an argument.

The design is docs/decisions/0001-catalogs-and-the-routed-mount.md.

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
  :class:`ToolSurface` (its ``ProxyHandlers``, so the call pipeline of
  :mod:`cartograph.calls.pipeline`), the same path its per-catalog endpoint
  uses, so exactly one authorization decision and one audit record happen,
  at the target, naming the real catalog;
* a principal sees only the catalogs it reaches (P-AUTH-5): the ``catalog``
  enum, the tool union, every error and the instructions are built from them,
  and a catalog it cannot reach is answered exactly like one that does not
  exist;
* a call refused here, before any target runs it (no ``catalog``, an unknown
  one, one the principal cannot reach), is audited here, once (P-AUDIT-1);
  the record of an unreachable catalog names that catalog and says
  ``catalog_forbidden``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeGuard

from mcp.types import (
    CallToolResult,
    CompleteResult,
    Completion,
    CompletionArgument,
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptReference,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    Tool,
)

from cartograph import error_codes as codes
from cartograph.calls.pipeline import audit_record
from cartograph.calls.request import Call, CallRequest
from cartograph.config.catalog_rules import ROUTED_NAME
from cartograph.echo import echoed
from cartograph.errors import (
    CallError,
    CartographError,
    ConfigError,
    PolicyError,
    UnknownToolError,
)
from cartograph.gateway.audit import AuditSink, write_record
from cartograph.gateway.results import error_code, error_result
from cartograph.server.auth import TokenAuthority
from cartograph.server.call_context import CALL_CONTEXT
from cartograph.server.handlers import ContentSurface, ToolSurface
from cartograph.server.passthrough import ChangeListener, UpdateListener, split_resource_uri

CATALOG_ARGUMENT: Final = "catalog"
UNKNOWN_TOOL_CODES: Final = frozenset({codes.UNKNOWN_PROXY_TOOL, codes.UNKNOWN_TOOL})
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
            code=codes.ROUTED_ARGUMENT_CLASH,
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
    """A :class:`ToolSurface` over several catalogs' own surfaces (built without prefix).

    ``authority`` (when auth is on) decides which catalogs each principal sees;
    ``audit`` receives the refusals made here, before any target runs.
    """

    def __init__(
        self,
        targets: Mapping[str, ToolSurface],
        *,
        authority: TokenAuthority | None = None,
        audit: AuditSink | None = None,
    ) -> None:
        if not targets:
            raise ConfigError(
                "the routed mount needs at least one catalog.", code=codes.NO_CATALOGS
            )
        self._targets = dict(targets)
        self._names = tuple(self._targets)
        self._authority = authority
        self._audit = audit

    @property
    def catalogs(self) -> tuple[str, ...]:
        return self._names

    @property
    def catalog_required(self) -> bool:
        return len(self._names) > 1

    def reachable(self, principal: str | None) -> tuple[str, ...]:
        """The routed catalogs ``principal`` may use, in configured order (all, auth off)."""
        if self._authority is None or not self._authority.enabled:
            return self._names
        found = self._authority.principal(principal)
        return found.reachable(self._names) if found is not None else ()

    def _current(self) -> tuple[str, ...]:
        context = CALL_CONTEXT.get()
        return self.reachable(context.principal if context is not None else None)

    def exposed(self, catalogs: Sequence[str] | None = None) -> dict[str, tuple[str, ...]]:
        """Each catalog's tool names, as its own policy exposes them (default: all catalogs)."""
        names = self._names if catalogs is None else catalogs
        return {n: tuple(t.name for t in self._targets[n].list_tools()) for n in names}

    def list_tools(self) -> list[Tool]:
        """The union of the reachable catalogs' tools (first descriptor wins), with ``catalog``."""
        reachable = self._current()
        union: dict[str, Tool] = {}
        for name in reachable:
            for tool in self._targets[name].list_tools():
                union.setdefault(tool.name, tool)
        required = len(reachable) > 1
        return [with_catalog_property(t, reachable, required=required) for t in union.values()]

    @property
    def holds_client_state(self) -> bool:
        """True when any catalog behind the routed mount keeps per-client sessions."""
        return any(bool(getattr(s, "holds_client_state", True)) for s in self._targets.values())

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
        started = time.perf_counter()
        rest = dict(arguments)
        reachable = self.reachable(principal)
        try:
            catalog = self._resolve_catalog(rest.pop(CATALOG_ARGUMENT, None), name, reachable)
        except _Refused as refused:
            await self._audit_refusal(refused, name, rest, principal, started)
            return error_result(refused.error)
        result = await self._targets[catalog].call_tool(name, rest, principal=principal)
        if error_code(result) in UNKNOWN_TOOL_CODES:
            return self._explain_unknown(name, catalog, result, reachable)
        return result

    def _resolve_catalog(self, value: object, tool: str, reachable: Sequence[str]) -> str:
        """The catalog to run in; raises _Refused naming only ``reachable`` catalogs."""
        listed = ", ".join(reachable) or "(none)"
        if value is None and len(reachable) == 1:
            return reachable[0]
        if value is None:
            raise _Refused(
                CallError(
                    f"{echoed(tool)!r} needs a {CATALOG_ARGUMENT!r} argument on this server: "
                    f"one of {listed}.",
                    code=codes.CATALOG_REQUIRED,
                    catalogs=list(reachable),
                )
            )
        if isinstance(value, str) and value in reachable:
            return value
        forbidden = isinstance(value, str) and value in self._targets
        raise _Refused(
            CallError(
                f"{CATALOG_ARGUMENT}={value!r} is not served here; use one of {listed}.",
                code=codes.UNKNOWN_CATALOG,
                catalogs=list(reachable),
            ),
            catalog=str(value) if forbidden else ROUTED_NAME,
            outcome=codes.CATALOG_FORBIDDEN if forbidden else codes.UNKNOWN_CATALOG,
        )

    async def _audit_refusal(
        self,
        refused: _Refused,
        tool: str,
        arguments: dict[str, Any] | None,
        principal: str | None,
        started: float,
    ) -> None:
        """One record for a request refused here, built as the call pipeline builds its own."""
        if self._audit is None:
            return
        request = CallRequest(refused.catalog, principal, tool, arguments)
        await write_record(self._audit, audit_record(Call(request, started), refused.outcome))

    def _explain_unknown(
        self, tool: str, catalog: str, refusal: CallToolResult, reachable: Sequence[str]
    ) -> CallToolResult:
        """The target refused (and audited) a tool it does not expose; name the key that gates it.

        The union lists ``tool`` because a sibling exposes it, so "unknown tool"
        would mislead: the agent needs the catalog and the operator the config key.
        Only catalogs the principal reaches are named.
        """
        offering = [c for c, tools in self.exposed(reachable).items() if tool in tools]
        if not offering:
            return refusal
        key = policy_key(catalog)
        return error_result(
            PolicyError(
                f"tool {tool!r} is not exposed by catalog {catalog!r} (config key {key}); "
                f"catalogs that expose it: {', '.join(offering)}.",
                code=codes.TOOL_NOT_EXPOSED,
                tool=tool,
                catalog=catalog,
                key=key,
            )
        )

    # -- resources and prompts (server/passthrough.py) -------------------------------
    #
    # Resource URIs already name their catalog (cartograph://C/S/U), so the routed mount
    # lists the union and routes a read by the URI. Prompts get a ``catalog`` argument,
    # exactly as tools do. Either way the target catalog authorizes and audits.

    def _content_targets(self) -> list[tuple[str, ContentSurface]]:
        return [
            (name, surface)
            for name in self._current()
            if _serves_content(surface := self._targets[name])
        ]

    def subscribe_changes(self, listener: ChangeListener) -> None:
        for surface in self._targets.values():
            if _serves_content(surface):
                surface.subscribe_changes(listener)

    def subscribe_updates(self, listener: UpdateListener) -> None:
        for surface in self._targets.values():
            if _serves_content(surface):
                surface.subscribe_updates(listener)

    async def subscribe_resource(self, uri: str, *, principal: str | None) -> None:
        """Routed by the URI's catalog, like a read; that catalog authorizes and audits."""
        surface = await self._resource_surface(uri, "resources/subscribe", principal)
        await surface.subscribe_resource(uri, principal=principal)

    async def unsubscribe_resource(self, uri: str, *, principal: str | None) -> None:
        surface = await self._resource_surface(uri, "resources/unsubscribe", principal)
        await surface.unsubscribe_resource(uri, principal=principal)

    async def content_settled(self) -> None:
        for _, surface in self._content_targets():
            await surface.content_settled()

    def list_resources(self) -> list[Resource]:
        return [r for _, s in self._content_targets() for r in s.list_resources()]

    def list_resource_templates(self) -> list[ResourceTemplate]:
        return [t for _, s in self._content_targets() for t in s.list_resource_templates()]

    def list_prompts(self) -> list[Prompt]:
        """The union of the reachable catalogs' prompts, each with a ``catalog`` argument."""
        targets = self._content_targets()
        reachable = [name for name, _ in targets]
        union: dict[str, Prompt] = {}
        for _name, surface in targets:
            for prompt in surface.list_prompts():
                union.setdefault(prompt.name, prompt)
        required = len(reachable) > 1
        argument = PromptArgument(
            name=CATALOG_ARGUMENT,
            description=f"Catalog to act in: {', '.join(reachable)}.",
            required=required,
        )
        return [
            p.model_copy(update={"arguments": [*(p.arguments or []), argument]})
            for p in union.values()
        ]

    async def read_resource(self, uri: str, *, principal: str | None) -> ReadResourceResult:
        surface = await self._resource_surface(uri, "resources/read", principal)
        return await surface.read_resource(uri, principal=principal)

    async def _resource_surface(
        self, uri: str, method: str, principal: str | None
    ) -> ContentSurface:
        """The catalog surface a ``cartograph://C/…`` URI names; an unreachable C is audited."""
        started = time.perf_counter()
        parts = split_resource_uri(uri)
        surface = dict(self._content_targets()).get(parts[0]) if parts is not None else None
        if surface is None:  # no such catalog, or one this principal cannot reach: the same
            error = UnknownToolError(
                f"no resource {echoed(uri)!r} here; see resources/list", code=codes.UNKNOWN_RESOURCE
            )
            known = parts is not None and parts[0] in self._targets
            refused = _Refused(
                error,
                catalog=parts[0] if parts is not None and known else ROUTED_NAME,
                outcome=codes.CATALOG_FORBIDDEN if known else codes.UNKNOWN_RESOURCE,
            )
            await self._audit_refusal(refused, method, None, principal, started)
            raise error
        return surface

    async def complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        principal: str | None,
    ) -> CompleteResult:
        """Route by the template's URI, or by the prompt's ``catalog`` argument (as prompts/get).

        Completing ``catalog`` itself is answered here from the reachable catalogs:
        no catalog is asked, so there is nothing to audit.
        """
        method = "completion/complete"
        if isinstance(ref, ResourceTemplateReference):
            surface = await self._resource_surface(ref.uri, method, principal)
            return await surface.complete(ref, argument, context_arguments, principal=principal)
        reachable = [c for c, _ in self._content_targets()]
        if argument.name == CATALOG_ARGUMENT:
            values = [c for c in reachable if c.startswith(argument.value)]
            return CompleteResult(completion=Completion(values=values, total=len(values)))
        rest = dict(context_arguments or {})
        try:
            catalog = self._resolve_catalog(rest.pop(CATALOG_ARGUMENT, None), ref.name, reachable)
        except _Refused as refused:
            await self._audit_refusal(refused, method, None, principal, time.perf_counter())
            raise refused.error from None
        target = self._targets[catalog]
        assert _serves_content(target)  # _content_targets offered only such catalogs
        return await target.complete(ref, argument, rest or None, principal=principal)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, principal: str | None
    ) -> GetPromptResult:
        rest = dict(arguments or {})
        reachable = [c for c, _ in self._content_targets()]
        try:
            catalog = self._resolve_catalog(rest.pop(CATALOG_ARGUMENT, None), name, reachable)
        except _Refused as refused:
            await self._audit_refusal(refused, "prompts/get", rest, principal, time.perf_counter())
            raise refused.error from None
        surface = self._targets[catalog]
        assert _serves_content(surface)  # _content_targets offered only such catalogs
        return await surface.get_prompt(name, rest or None, principal=principal)

    def instructions(self) -> str:
        """What the agent reads: the bare tool names and the ``catalog`` value to pass.

        The SDK sends one text to every client, so with principals of differing
        reach it names no catalog and points at the ``catalog`` enum, which is
        built per principal (P-AUTH-5).
        """
        if not self._everyone_reaches_all():
            return (
                "Cartograph serves several catalogs through one set of tools. Every tool takes "
                f"a `{CATALOG_ARGUMENT}` argument naming the catalog to act in; the values you "
                "may use are the `enum` of that argument in `tools/list`. Find a tool with "
                "`discover` in a catalog, then run it with `call` passing the same catalog."
            )
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

    def _everyone_reaches_all(self) -> bool:
        return self._authority is None or self._authority.reaches_all(self._names)


def _serves_content(surface: ToolSurface) -> TypeGuard[ContentSurface]:
    return callable(getattr(surface, "subscribe_changes", None))


class _Refused(Exception):
    """A routed call refused before any target ran it, and what its audit record says."""

    def __init__(
        self, error: CartographError, *, catalog: str = ROUTED_NAME, outcome: str | None = None
    ) -> None:
        super().__init__(error.message)
        self.error = error
        self.catalog = catalog
        self.outcome = outcome or error.code
