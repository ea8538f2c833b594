"""The proxy's tool surface for one catalog: list, authorize, dispatch, audit.

:class:`ProxyHandlers` is the one place a proxy tool call is authorized and
audited — stdio, each HTTP per-catalog mount and the routed mount all end up
here — so every call gets exactly one authorization decision and exactly one
audit record naming the catalog it ran in (P-AUTH-3, P-LOG-2). Refusals and
upstream failures come back as ``isError`` results carrying a stable code;
the proxy itself keeps serving.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anyio
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import (
    CallToolResult,
    CompleteResult,
    CompletionArgument,
    GetPromptResult,
    Prompt,
    PromptReference,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    TextContent,
    Tool,
)

from cartograph import error_codes as codes
from cartograph.config.model import CatalogPolicy
from cartograph.errors import (
    ArgumentError,
    AuditUnavailable,
    CartographError,
    PolicyError,
    UnknownToolError,
)
from cartograph.gateway.arguments import repair_meta_call
from cartograph.gateway.audit import (
    AuditRecord,
    AuditSink,
    argument_shape,
    utc_now,
    write_record,
)
from cartograph.gateway.pool import partition_key
from cartograph.gateway.results import error_code, error_result
from cartograph.server import metrics
from cartograph.server.discover_reply import discover_structured, discover_text
from cartograph.server.offload import run_cpu
from cartograph.server.passthrough import (
    ChangeListener,
    UpdateListener,
    audit_uri,
    prompt_name,
    resource_uri,
    split_prompt_name,
    split_resource_uri,
)
from cartograph.server.pending import PendingRecord, with_repairs
from cartograph.server.runtime import CatalogRuntime, policy_allows
from cartograph.server.tools import CALL, DISCOVER, MAX_K, PROXY_TOOLS, STATUS, proxy_tool
from cartograph.telemetry import annotate, finish, span
from cartograph.telemetry.spans import OUTCOME_OK

logger = logging.getLogger(__name__)

_R = TypeVar("_R")

Authorize = Callable[[str | None, str, str], None]
"""``authorize(principal, catalog, proxy_tool_name)``; raises PolicyError to refuse."""


@dataclass(frozen=True)
class CallContext:
    """Who is calling, set by the transport for the duration of one request.

    A context variable rather than a parameter so surfaces layered on top of
    :class:`ProxyHandlers` (the routed mount) need not thread it through.
    """

    client: str | None = None
    progress: ProgressFnT | None = None
    principal: str | None = None
    trace: str | None = None
    """The W3C ``traceparent`` of the request's ``_meta``; the audit record keeps it."""


CALL_CONTEXT: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "cartograph_call_context", default=None
)


class ToolSurface(Protocol):
    def list_tools(self) -> list[Tool]: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, principal: str | None
    ) -> CallToolResult: ...

    def instructions(self) -> str: ...


class ContentSurface(Protocol):
    """Upstream resources and prompts as one mount serves them (``server/passthrough.py``).

    Lists read the caller from :data:`CALL_CONTEXT`; refusals raise
    :class:`CartographError`, which the MCP layer turns into JSON-RPC errors.
    """

    def list_resources(self) -> list[Resource]: ...

    def list_resource_templates(self) -> list[ResourceTemplate]: ...

    def list_prompts(self) -> list[Prompt]: ...

    async def read_resource(self, uri: str, *, principal: str | None) -> ReadResourceResult: ...

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, principal: str | None
    ) -> GetPromptResult: ...

    def subscribe_changes(self, listener: ChangeListener) -> None: ...

    def subscribe_updates(self, listener: UpdateListener) -> None: ...

    async def subscribe_resource(self, uri: str, *, principal: str | None) -> None: ...

    async def unsubscribe_resource(self, uri: str, *, principal: str | None) -> None: ...

    async def complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        principal: str | None,
    ) -> CompleteResult: ...


CompletionRef = PromptReference | ResourceTemplateReference


class ProxyHandlers:
    """`discover` / `status` / `call` for one catalog, as one MCP mount serves them."""

    def __init__(
        self,
        runtime: CatalogRuntime,
        *,
        catalog: str,
        policy: CatalogPolicy | None = None,
        tool_prefix: str | None = None,
        authorize: Authorize | None = None,
        audit: AuditSink | None = None,
    ) -> None:
        self.runtime = runtime
        self.catalog = catalog
        self.policy = policy or runtime.policy
        self.tool_prefix = tool_prefix
        self.authorize = authorize
        self.audit = audit if audit is not None else runtime.audit
        self._exposed = tuple(t for t in PROXY_TOOLS if t in self.policy.proxy_tools)

    async def release_client(self, client: str) -> None:
        """A downstream client (an HTTP MCP session) ended: close its upstream sessions."""
        await self.runtime.gateway.release(client)

    async def close_upstreams(self) -> None:
        """Shutdown: end in-flight upstream calls with ``shutting_down``, close every session."""
        await self.runtime.gateway.aclose()

    @property
    def holds_client_state(self) -> bool:
        """True when an upstream of this catalog keeps per-client sessions (HTTP: stateful)."""
        return self.runtime.gateway.holds_client_state

    # -- listing ---------------------------------------------------------------

    def list_tools(self) -> list[Tool]:
        annotate(catalog=self.catalog)
        return [proxy_tool(name, prefix=self.tool_prefix) for name in self._exposed]

    def instructions(self) -> str:
        return self.describe(self.catalog, self._exposed, self.tool_prefix)

    @staticmethod
    def describe(catalog: str, exposed: tuple[str, ...], prefix: str | None) -> str:
        """The MCP ``instructions`` text, naming the tools as the agent sees them."""
        names = {name: f"{prefix or ''}{name}" for name in exposed}
        parts = [f"Cartograph catalog {catalog!r}: one entry for many MCP servers."]
        if DISCOVER in names:
            parts.append(f"Use `{names[DISCOVER]}` with a task to find tools.")
        if CALL in names:
            parts.append(
                f"Then `{names[CALL]}` with server, tool and arguments exactly as discovered."
            )
        if STATUS in names:
            parts.append(f"`{names[STATUS]}` shows health and withheld tools.")
        return " ".join(parts)

    def _bare_name(self, name: str) -> str:
        prefix = self.tool_prefix or ""
        return name[len(prefix) :] if prefix and name.startswith(prefix) else name

    def _proxy_name(self, name: str) -> str | None:
        prefix = self.tool_prefix or ""
        if not name.startswith(prefix):
            return None
        bare = name[len(prefix) :]
        return bare if bare in self._exposed else None

    # -- dispatch ----------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        principal: str | None,
        client: str | None = None,
        progress: ProgressFnT | None = None,
    ) -> CallToolResult:
        """Authorize, run and audit one proxy tool call; refusals become error results."""
        context = CALL_CONTEXT.get() or CallContext()
        client = client if client is not None else context.client
        progress = progress if progress is not None else context.progress
        started = time.perf_counter()
        record = PendingRecord(proxy_tool=name, arguments=arguments, trace=context.trace)
        annotate(catalog=self.catalog)
        try:
            result = await self._dispatch(
                name, arguments or {}, principal, client, progress, record
            )
        except CartographError as exc:
            result = error_result(_redact(exc, self.runtime))
        except BaseException:
            # Cancelled (the client gave up, or shutdown): still exactly one record.
            with anyio.CancelScope(shield=True):
                try:
                    await self._audit(record, principal, None, started)
                except AuditUnavailable as exc:
                    logger.error("audit record lost for a cancelled call: %s", exc.message)
            raise
        try:
            await self._audit(record, principal, result, started)
        except AuditUnavailable as exc:  # neither stored nor spooled: the answer is withheld
            logger.error("audit record lost for %s: %s", record.proxy_tool, exc.message)
            result = error_result(exc)
        self._observe(record, result, started)
        if result.is_error and error_code(result) == AuditUnavailable.code:
            return result
        await self._learn(record, result, partition_key(principal, client) or "local")
        return result

    async def _dispatch(
        self,
        name: str,
        arguments: dict[str, Any],
        principal: str | None,
        client: str | None,
        progress: ProgressFnT | None,
        record: PendingRecord,
    ) -> CallToolResult:
        # Authorize before anything else: a principal outside this catalog must not
        # learn which tools its policy exposes (the refusal would differ otherwise).
        if self.authorize is not None:
            self.authorize(principal, self.catalog, self._bare_name(name))
        bare = self._proxy_name(name)
        if bare is None:
            raise UnknownToolError(
                f"this server has no tool {name!r}; its tools are "
                f"{', '.join(t.name for t in self.list_tools())}",
                code=codes.UNKNOWN_PROXY_TOOL,
            )
        record.proxy_tool = bare
        annotate(proxy_tool=bare)
        if bare == DISCOVER:
            return await self._discover(arguments, record)
        if bare == STATUS:
            return self._status(arguments)
        return await self._call(arguments, principal, client, progress, record)

    async def _discover(self, arguments: dict[str, Any], record: PendingRecord) -> CallToolResult:
        """Check the arguments here, then rank in a worker thread (P-REL-10).

        The length check runs first so an oversized task costs nothing but the
        check; the ranking then holds a CPU slot, never the event loop.
        """
        from cartograph.index.discover import check_task_length

        task = arguments.get("task")
        k = arguments.get("k")
        if not isinstance(task, str) or not task.strip():
            raise ArgumentError(
                'discover needs a non-empty "task" string, e.g. {"task": "read a file"}',
                code=codes.BAD_ARGUMENTS,
            )
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K):
            raise ArgumentError(
                f'"k" must be an integer from 1 to {MAX_K}', code=codes.BAD_ARGUMENTS
            )
        settings = self.runtime.config.index
        check_task_length(task, settings.max_task_chars)

        def rank() -> CallToolResult:
            found = self.runtime.discover(task, k)
            record.found = found
            return CallToolResult(
                content=[TextContent(text=discover_text(found))],
                # ids, scores and card provenance; the text above carries the arguments
                structured_content=discover_structured(found),
            )

        asked: dict[str, str | int] = {
            "cartograph.catalog": self.catalog,
            "cartograph.discover.k": k or settings.default_k,
        }
        with span("discover", asked) as current:
            result = await run_cpu(rank, workers=settings.cpu_workers)
            found = record.found
            if found is not None:  # counts only: the task text is the caller's argument
                current.set_attributes(
                    {
                        "cartograph.discover.abstained": found.abstained,
                        "cartograph.discover.candidates": len(found.tools),
                        "cartograph.discover.confidence": found.confidence,
                    }
                )
            finish(current, OUTCOME_OK)
        return result

    def _status(self, arguments: dict[str, Any]) -> CallToolResult:
        """Totals and problems by default; every server with ``detail`` (status_view)."""
        import json

        from cartograph.server.status_view import compact_status

        detail = arguments.get("detail", False)
        if not isinstance(detail, bool):
            raise ArgumentError('"detail" must be true or false', code=codes.BAD_ARGUMENTS)
        report = self.runtime.status()
        view = report if detail else compact_status(report)
        return CallToolResult(
            content=[TextContent(text=json.dumps(view, ensure_ascii=False, separators=(",", ":")))],
            structured_content=view,
        )

    async def _call(
        self,
        arguments: dict[str, Any],
        principal: str | None,
        client: str | None,
        progress: ProgressFnT | None,
        record: PendingRecord,
    ) -> CallToolResult:
        meta = repair_meta_call(arguments, self._known)
        record.target(meta)
        annotate(server=meta.server, tool=meta.tool)
        if self.audit.degraded:  # fail closed before any upstream I/O (docs/fleet.md)
            await anyio.to_thread.run_sync(self.audit.admit)
        if not policy_allows(self.policy, meta.server, meta.tool):
            raise PolicyError(
                f"{meta.server}/{meta.tool} is not allowed in catalog {self.catalog!r} "
                f'(catalogs[name="{self.catalog}"].policy allow/deny)',
                code=codes.TOOL_DENIED,
                server=meta.server,
                tool=meta.tool,
            )
        result = await self.runtime.call(
            meta.server,
            meta.tool,
            meta.arguments,
            principal=principal,
            client=client,
            progress_callback=progress,
        )
        return with_repairs(result, meta)

    # -- resources and prompts (server/passthrough.py) -------------------------------

    def subscribe_changes(self, listener: ChangeListener) -> None:
        """Forward this catalog's resources/prompts ``list_changed`` to ``listener``."""
        self.runtime.content.subscribe(listener)

    def subscribe_updates(self, listener: UpdateListener) -> None:
        """Forward this catalog's ``notifications/resources/updated`` to ``listener``."""
        self.runtime.content.on_updated(listener)

    async def subscribe_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> None:
        """Authorize, map back, subscribe upstream and audit one ``resources/subscribe``."""
        await self._subscription("resources/subscribe", uri, principal, client)

    async def unsubscribe_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> None:
        """The same for ``resources/unsubscribe`` (forwarded once no client holds the URI)."""
        await self._subscription("resources/unsubscribe", uri, principal, client)

    async def _subscription(
        self, method: str, uri: str, principal: str | None, client: str | None
    ) -> None:
        record = PendingRecord(proxy_tool=method, arguments=None)
        client = client if client is not None else _current_client()
        runtime = self.runtime
        send = (
            runtime.subscribe_resource
            if method == "resources/subscribe"
            else runtime.unsubscribe_resource
        )

        async def run() -> None:
            parts = split_resource_uri(uri)
            if parts is not None and parts[0] == self.catalog:
                record.server, record.tool = parts[1], audit_uri(parts[2])
            server, upstream = self._resource_target(uri)
            await send(server, upstream, principal=principal, client=client)

        await self._content_request(record, principal, run)

    def _passes(self, kind: str, server: str, name: str) -> bool:
        return kind in self.policy.passthrough and policy_allows(self.policy, server, name)

    def list_resources(self) -> list[Resource]:
        return [
            r.model_copy(update={"uri": resource_uri(self.catalog, server, r.uri)})
            for server, listing in self.runtime.content_listings()
            for r in listing.resources
            if self._passes("resources", server, r.uri)
        ]

    def list_resource_templates(self) -> list[ResourceTemplate]:
        return [
            t.model_copy(
                update={"uri_template": resource_uri(self.catalog, server, t.uri_template)}
            )
            for server, listing in self.runtime.content_listings()
            for t in listing.templates
            if self._passes("resources", server, t.uri_template)
        ]

    def list_prompts(self) -> list[Prompt]:
        return [
            p.model_copy(update={"name": prompt_name(server, p.name, self.tool_prefix)})
            for server, listing in self.runtime.content_listings()
            for p in listing.prompts
            if self._passes("prompts", server, p.name)
        ]

    async def read_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> ReadResourceResult:
        """Authorize, map back, read through the gateway and audit one ``resources/read``."""
        record = PendingRecord(proxy_tool="resources/read", arguments=None)
        client = client if client is not None else _current_client()

        async def read() -> ReadResourceResult:
            server, upstream = self._resource_target(uri)
            record.server, record.tool = server, audit_uri(upstream)
            result = await self.runtime.read_resource(
                server, upstream, principal=principal, client=client
            )
            contents = [
                c.model_copy(update={"uri": resource_uri(self.catalog, server, c.uri)})
                for c in result.contents
            ]
            return result.model_copy(update={"contents": contents})

        return await self._content_request(record, principal, read)

    def _resource_target(self, uri: str) -> tuple[str, str]:
        parts = split_resource_uri(uri)
        if parts is None or parts[0] != self.catalog:
            raise UnknownToolError(
                f"no resource {uri!r} in catalog {self.catalog!r}; its resources are "
                f"cartograph://{self.catalog}/<server>/<uri> (see resources/list)",
                code=codes.UNKNOWN_RESOURCE,
            )
        _catalog, server, upstream = parts
        self._check_passes("resources", server, upstream)
        return server, upstream

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None,
        *,
        principal: str | None,
        client: str | None = None,
    ) -> GetPromptResult:
        """Authorize, map back, render through the gateway and audit one ``prompts/get``."""
        record = PendingRecord(proxy_tool="prompts/get", arguments=arguments)
        client = client if client is not None else _current_client()

        async def get() -> GetPromptResult:
            parts = split_prompt_name(name, self.tool_prefix)
            if parts is None:
                raise UnknownToolError(
                    f"no prompt {name!r} in catalog {self.catalog!r}; prompts are named "
                    f"{self.tool_prefix or ''}<server>/<prompt> (see prompts/list)",
                    code=codes.UNKNOWN_PROMPT,
                )
            server, prompt = parts
            record.server, record.tool = server, prompt
            self._check_passes("prompts", server, prompt)
            return await self.runtime.get_prompt(
                server, prompt, arguments, principal=principal, client=client
            )

        return await self._content_request(record, principal, get)

    async def complete(
        self,
        ref: CompletionRef,
        argument: CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        principal: str | None,
        client: str | None = None,
    ) -> CompleteResult:
        """Authorize, map the prompt or template back, complete and audit one argument.

        The same names, allow/deny policy and audit as ``prompts/get`` and
        ``resources/read``; the record names the argument (its shape), never its value.
        """
        record = PendingRecord(
            proxy_tool="completion/complete", arguments={argument.name: argument.value}
        )
        client = client if client is not None else _current_client()

        async def complete() -> CompleteResult:
            server, upstream_ref = self._completion_target(ref, record)
            return await self.runtime.complete(
                server,
                upstream_ref,
                argument,
                context_arguments,
                principal=principal,
                client=client,
            )

        return await self._content_request(record, principal, complete)

    def _completion_target(
        self, ref: CompletionRef, record: PendingRecord
    ) -> tuple[str, CompletionRef]:
        """``(server, the upstream's own reference)``; the record names it before policy runs."""
        if isinstance(ref, ResourceTemplateReference):
            parts = split_resource_uri(ref.uri)
            if parts is not None and parts[0] == self.catalog:
                record.server, record.tool = parts[1], audit_uri(parts[2])
            server, upstream = self._resource_target(ref.uri)
            return server, ResourceTemplateReference(uri=upstream)
        found = split_prompt_name(ref.name, self.tool_prefix)
        if found is None:
            raise UnknownToolError(
                f"no prompt {ref.name!r} in catalog {self.catalog!r}; prompts are named "
                f"{self.tool_prefix or ''}<server>/<prompt> (see prompts/list)",
                code=codes.UNKNOWN_PROMPT,
            )
        server, prompt = record.server, record.tool = found
        self._check_passes("prompts", server, prompt)
        return server, PromptReference(name=prompt)

    def _check_passes(self, kind: str, server: str, name: str) -> None:
        if kind not in self.policy.passthrough:
            raise PolicyError(
                f"catalog {self.catalog!r} does not pass upstream {kind} through "
                f'(catalogs[name="{self.catalog}"].policy.passthrough)',
                code=codes.RESOURCES_OFF if kind == "resources" else codes.PROMPTS_OFF,
            )
        if not policy_allows(self.policy, server, name):
            raise PolicyError(
                f"{server}/{name} is not allowed in catalog {self.catalog!r} "
                f'(catalogs[name="{self.catalog}"].policy allow/deny)',
                code=codes.RESOURCE_DENIED if kind == "resources" else codes.PROMPT_DENIED,
                server=server,
            )

    async def _content_request(
        self, record: PendingRecord, principal: str | None, run: Callable[[], Awaitable[_R]]
    ) -> _R:
        """One authorization decision and one audit record, as for a proxy tool call."""
        started = time.perf_counter()
        outcome = "cancelled"
        annotate(catalog=self.catalog)
        try:
            if self.authorize is not None:
                self.authorize(principal, self.catalog, record.proxy_tool)
            result = await run()
            outcome = "ok"
            return result
        except CartographError as exc:
            outcome = exc.code
            raise _redact(exc, self.runtime) from None
        finally:
            annotate(server=record.server, tool=record.tool)
            with anyio.CancelScope(shield=True):  # a cancelled request is audited too
                await write_record(self.audit, self._entry(record, principal, outcome, started))

    def _known(self, server: str, tool: str) -> bool:
        card = self.runtime.cards.get(server)
        return card is not None and card.body.tool(tool) is not None

    async def _audit(
        self,
        record: PendingRecord,
        principal: str | None,
        result: CallToolResult | None,
        started: float,
    ) -> None:
        """Write the call's one record; durable before the answer goes out."""
        await write_record(self.audit, self._entry(record, principal, _outcome(result), started))

    def _entry(
        self, record: PendingRecord, principal: str | None, outcome: str, started: float
    ) -> AuditRecord:
        return AuditRecord(
            time=utc_now(),
            catalog=self.catalog,
            principal=principal,
            proxy_tool=record.proxy_tool,
            server=record.server,
            tool=record.tool,
            duration_ms=round((time.perf_counter() - started) * 1000.0, 3),
            outcome=outcome,
            arguments=argument_shape(record.arguments),
            repairs=record.repairs,
            trace=record.trace,
        )

    def _observe(self, record: PendingRecord, result: CallToolResult, started: float) -> None:
        """Count the answered call for ``/metrics`` (the facts of its audit record)."""
        found = record.found
        metrics.observe(
            catalog=self.catalog,
            proxy_tool=record.proxy_tool,
            server=record.server,
            tool=record.tool,
            outcome=_outcome(result),
            seconds=time.perf_counter() - started,
            abstained=bool(found.abstained) if found is not None else None,
        )

    async def _learn(self, record: PendingRecord, result: CallToolResult, session: str) -> None:
        """Tell learning what the session asked for and which calls then served it."""
        learning = self.runtime.learning
        if learning is None:
            return
        try:
            if record.proxy_tool == DISCOVER and record.found is not None:
                shown = [(t.server, t.tool) for t in record.found.tools]
                await learning.record_discover(session, record.found.task, shown)
            elif record.proxy_tool == CALL and record.server and record.tool:
                await learning.record_call(session, record.server, record.tool, _outcome(result))
        except CartographError as exc:  # the usage log failed: the answer still goes out
            logger.warning("learning could not log %s: %s", record.proxy_tool, exc.code)


def _current_client() -> str | None:
    context = CALL_CONTEXT.get()
    return context.client if context is not None else None


def _outcome(result: CallToolResult | None) -> str:
    if result is None:
        return "cancelled"
    return error_code(result) or ("tool_error" if result.is_error else "ok")


def _redact(exc: CartographError, runtime: CatalogRuntime) -> CartographError:
    exc.message = runtime.redactor(exc.message)
    exc.details = runtime.redactor.data(exc.details)
    return exc
