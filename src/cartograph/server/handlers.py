"""The proxy's tool surface for one catalog: list, then run each call through the pipeline.

:class:`ProxyHandlers` is where a proxy tool call enters the call pipeline
(:mod:`cartograph.calls.pipeline`) — stdio, each HTTP per-catalog mount and
the routed mount all end up here — so every call gets exactly one
authorization decision and exactly one audit record naming the catalog it ran
in (P-AUTH-3, P-LOG-2). The handlers are the pipeline's
:class:`~cartograph.calls.pipeline.CallSite`: they hold the mount's settings
and answer ``discover`` and ``status`` themselves; after the record they count
the call for ``/metrics`` and tell learning. Refusals and upstream failures
come back as ``isError`` results carrying a stable code; the proxy itself
keeps serving.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

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
from cartograph.calls.pipeline import carded, outcome_of, run_call
from cartograph.calls.request import Answer, Call, CallRequest
from cartograph.config.model import CatalogPolicy
from cartograph.errors import (
    ArgumentError,
    AuditUnavailable,
    CartographError,
)
from cartograph.gateway.audit import (
    AuditSink,
)
from cartograph.gateway.pool import partition_key
from cartograph.gateway.results import error_code
from cartograph.learning.store import principal_name
from cartograph.server import metrics
from cartograph.server.call_context import CALL_CONTEXT, Authorize, CallContext
from cartograph.server.content_handlers import ContentHandlers
from cartograph.server.discover_reply import discover_structured, discover_text
from cartograph.server.offload import run_cpu
from cartograph.server.passthrough import (
    ChangeListener,
    UpdateListener,
)
from cartograph.server.runtime.catalog import CatalogRuntime
from cartograph.server.tools import CALL, DISCOVER, MAX_K, RUN, STATUS, exposed_tools, proxy_tool
from cartograph.telemetry import annotate, finish, span
from cartograph.telemetry.spans import OUTCOME_OK

if TYPE_CHECKING:  # code mode loads with its first catalog that turns it on
    from cartograph.server.code_tool import CodeTool

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

    async def content_settled(self) -> None: ...

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


class ProxyHandlers:
    """`discover` / `status` / `call` for one catalog, as one MCP mount serves them.

    Resources and prompts are a held :class:`ContentHandlers` (:attr:`content`),
    which the methods at the end hand each request to.
    """

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
        self.code_mode = runtime.config.code_mode_for(catalog)
        self._exposed = exposed_tools(self.policy.proxy_tools, code_mode=self.code_mode.enabled)
        self._code = self._code_tool() if self.code_mode.enabled else None
        """``run`` (code mode, server/code_tool.py), where ``[code_mode]`` turns it on."""
        self.content = ContentHandlers(
            runtime,
            catalog=catalog,
            policy=self.policy,
            tool_prefix=tool_prefix,
            authorize=authorize,
            audit=self.audit,
        )
        """Resources, prompts, completion and subscriptions (the :class:`ContentSurface`)."""

    async def release_client(self, client: str) -> None:
        """A downstream client (an HTTP MCP session) ended: release its resource
        subscriptions, then close its upstream sessions."""
        await self.runtime.passthrough.release_subscriptions(client)
        await self.runtime.gateway.release(client)

    async def close_upstreams(self) -> None:
        """Shutdown: end in-flight upstream calls with ``shutting_down``, close every session."""
        await self.runtime.gateway.aclose()
        if self._code is not None:
            await self._code.aclose()

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
        if RUN in names:
            parts.append(f"`{names[RUN]}` runs a program over the tools in one step.")
        return " ".join(parts)

    @property
    def exposed(self) -> tuple[str, ...]:
        """The proxy tools this mount serves (``policy.proxy_tools``), unprefixed."""
        return self._exposed

    @property
    def answers(self) -> dict[str, Answer]:
        """The proxy tools answered here; ``call`` is the one that goes upstream."""
        answers: dict[str, Answer] = {DISCOVER: self._discover, STATUS: self._status}
        if self._code is not None:
            answers[RUN] = self._run
        return answers

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
        """Run one proxy tool call through the call pipeline; refusals become error results.

        ``client`` and ``progress`` default to the transport's :data:`CALL_CONTEXT`.
        """
        context = CALL_CONTEXT.get() or CallContext()
        request = CallRequest(
            catalog=self.catalog,
            principal=principal,
            name=name,
            arguments=arguments,
            client=client if client is not None else context.client,
            progress=progress if progress is not None else context.progress,
            trace=context.trace or self._minted_trace(name),
        )
        return await self.run_call(request)

    def _code_tool(self) -> CodeTool:
        """``run``'s machinery, imported only where code mode is on (off by default).

        The sandbox, the bridge and the stub renderer are a fifth of the
        package's own import time; a proxy without ``run`` never needs them.
        """
        from cartograph.server.code_tool import CodeTool

        return CodeTool(self, self.code_mode)

    def _minted_trace(self, name: str) -> str | None:
        """A ``run`` that came without a ``traceparent`` gets one: it names the run's records."""
        if self._code is None or name != f"{self.tool_prefix or ''}{RUN}":
            return None
        from cartograph.codemode import RunId

        return RunId.new().traceparent

    async def _run(self, call: Call) -> CallToolResult:
        assert self._code is not None  # answers lists run only with code mode on
        return await self._code.run(call.request)

    async def run_call(self, request: CallRequest) -> CallToolResult:
        """Run ``request`` (for this catalog) through :mod:`cartograph.calls.pipeline`.

        The pipeline authorizes, checks, forwards and writes the one audit
        record; then the answered call is counted for ``/metrics`` and told to
        learning. An answer withheld for want of an audit record teaches nothing.
        """
        call, result = await run_call(self, request)
        self._observe(call, result)
        if result.is_error and error_code(result) == AuditUnavailable.code:
            return result
        await self._learn(call, result, request)
        return result

    async def _discover(self, call: Call) -> CallToolResult:
        """Check the arguments here, then rank in a worker thread (P-REL-10).

        The length check runs first so an oversized task costs nothing but the
        check; the ranking then holds a CPU slot, never the event loop.
        """
        from cartograph.index.discover import check_task_length

        arguments = call.request.arguments or {}
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
            found = self.runtime.discover(task, k, principal=call.request.principal)
            call.found = found
            result = CallToolResult(
                content=[TextContent(text=discover_text(found))],
                # ids, scores and card provenance; the text above carries the arguments
                structured_content=discover_structured(found),
            )
            # with code mode on, each tool's call as a `run` program writes it
            return self._code.taught(result, found) if self._code is not None else result

        asked: dict[str, str | int] = {
            "cartograph.catalog": self.catalog,
            "cartograph.discover.k": k or settings.default_k,
        }
        with span("discover", asked) as current:
            result = await run_cpu(rank, workers=settings.cpu_workers)
            found = call.found
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

    async def _status(self, call: Call) -> CallToolResult:
        """Totals and problems by default; every server with ``detail`` (status_view)."""
        import json

        from cartograph.server.status_view import compact_status

        detail = (call.request.arguments or {}).get("detail", False)
        if not isinstance(detail, bool):
            raise ArgumentError('"detail" must be true or false', code=codes.BAD_ARGUMENTS)
        report = self.runtime.status()
        view = report if detail else compact_status(report)
        return CallToolResult(
            content=[TextContent(text=json.dumps(view, ensure_ascii=False, separators=(",", ":")))],
            structured_content=view,
        )

    def _known_name(self, server: str, tool: str | None) -> bool:
        """Whether the federation has ``server`` (and ``tool`` on it): a metrics label."""
        if tool is None:
            return server in self.runtime.cards
        return carded(self.runtime, server, tool)

    def _observe(self, call: Call, result: CallToolResult) -> None:
        """Count the answered call for ``/metrics`` (the facts of its audit record)."""
        found = call.found
        metrics.observe(
            catalog=self.catalog,
            proxy_tool=call.proxy_tool,
            server=call.server,
            tool=call.tool,
            outcome=outcome_of(result),
            seconds=time.perf_counter() - call.started,
            abstained=bool(found.abstained) if found is not None else None,
            known=self._known_name,
        )

    async def _learn(self, call: Call, result: CallToolResult, request: CallRequest) -> None:
        """Tell learning what the session asked for and which calls then served it.

        The evidence is the request's principal's (the local one without a token).
        """
        learning = self.runtime.learning
        if learning is None:
            return
        session = partition_key(request.principal, request.client) or "local"
        try:
            if call.proxy_tool == DISCOVER and call.found is not None:
                shown = [(t.server, t.tool) for t in call.found.tools]
                principal = principal_name(request.principal)
                await learning.record_discover(session, call.found.task, shown, principal)
            elif call.proxy_tool == CALL and call.server and call.tool:
                await learning.record_call(session, call.server, call.tool, outcome_of(result))
        except CartographError as exc:  # the usage log failed: the answer still goes out
            logger.warning("learning could not log %s: %s", call.proxy_tool, exc.code)

    # -- resources and prompts: handed to the held ContentHandlers ---------------

    def subscribe_changes(self, listener: ChangeListener) -> None:
        self.content.subscribe_changes(listener)

    def subscribe_updates(self, listener: UpdateListener) -> None:
        self.content.subscribe_updates(listener)

    async def content_settled(self) -> None:
        await self.content.content_settled()

    def list_resources(self) -> list[Resource]:
        return self.content.list_resources()

    def list_resource_templates(self) -> list[ResourceTemplate]:
        return self.content.list_resource_templates()

    def list_prompts(self) -> list[Prompt]:
        return self.content.list_prompts()

    async def read_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> ReadResourceResult:
        return await self.content.read_resource(uri, principal=principal, client=client)

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None,
        *,
        principal: str | None,
        client: str | None = None,
    ) -> GetPromptResult:
        return await self.content.get_prompt(name, arguments, principal=principal, client=client)

    async def subscribe_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> None:
        await self.content.subscribe_resource(uri, principal=principal, client=client)

    async def unsubscribe_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> None:
        await self.content.unsubscribe_resource(uri, principal=principal, client=client)

    async def complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        principal: str | None,
        client: str | None = None,
    ) -> CompleteResult:
        return await self.content.complete(
            ref, argument, context_arguments, principal=principal, client=client
        )
