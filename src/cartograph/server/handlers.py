"""The proxy's tool surface for one catalog: list, authorize, dispatch, audit.

:class:`ProxyHandlers` is the one place a proxy tool call is authorized and
audited — stdio, each HTTP per-catalog mount and the routed mount all end up
here — so every call gets exactly one authorization decision and exactly one
audit record naming the catalog it ran in (P-AUTH-3, P-LOG-2). Refusals and
upstream failures come back as ``isError`` results carrying a stable code;
the proxy itself keeps serving.
"""

from __future__ import annotations

import logging
import time
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
from cartograph.calls.arguments import repair_meta_call
from cartograph.config.model import CatalogPolicy
from cartograph.errors import (
    ArgumentError,
    AuditUnavailable,
    CartographError,
    PolicyError,
    UnknownToolError,
)
from cartograph.gateway.audit import (
    AuditSink,
    write_record,
)
from cartograph.gateway.pool import partition_key
from cartograph.gateway.results import error_code, error_result
from cartograph.server import metrics
from cartograph.server.call_context import CALL_CONTEXT, Authorize, CallContext
from cartograph.server.content_handlers import ContentHandlers, redact
from cartograph.server.discover_reply import discover_structured, discover_text
from cartograph.server.offload import run_cpu
from cartograph.server.passthrough import (
    ChangeListener,
    UpdateListener,
)
from cartograph.server.pending import PendingRecord, with_repairs
from cartograph.server.runtime import CatalogRuntime, policy_allows
from cartograph.server.tools import CALL, DISCOVER, MAX_K, PROXY_TOOLS, STATUS, proxy_tool
from cartograph.telemetry import annotate, finish, span
from cartograph.telemetry.spans import OUTCOME_OK

logger = logging.getLogger(__name__)

_R = TypeVar("_R")


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


class ProxyHandlers(ContentHandlers):
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
            result = error_result(redact(exc, self.runtime))
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

    def _known_name(self, server: str, tool: str | None) -> bool:
        """Whether the federation has ``server`` (and ``tool`` on it): a metrics label."""
        if tool is None:
            return server in self.runtime.cards
        return self._known(server, tool)

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
            known=self._known_name,
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


def _outcome(result: CallToolResult | None) -> str:
    if result is None:
        return "cancelled"
    return error_code(result) or ("tool_error" if result.is_error else "ok")
