"""`cartograph serve` over stdio: start answering at once, connect the federation behind.

The MCP loop starts before the federation is connected, so a client's
``initialize`` is never held up by a slow upstream; `discover`/`call` wait
(bounded) for the catalog to be ready. stdout carries JSON-RPC only — fd 1
points at stderr while we serve (:mod:`cartograph.server.stdio.wire`, which
also spares each message the SDK's worker-thread hops), and all our logging
goes to stderr (P-STDIO-1). A request the SDK cannot parse still gets its
JSON-RPC error (:mod:`cartograph.server.stdio.guard`, P-REL-11). SIGTERM/SIGINT
and stdin EOF both end in-flight calls with an error and close every upstream
session, so no child process outlives the proxy (P-REL-7).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
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
    Tool,
)

from cartograph import error_codes as codes
from cartograph import startup_gc
from cartograph.config.catalogs import ResolvedCatalog
from cartograph.errors import CartographError
from cartograph.gateway.results import error_result
from cartograph.server.content_handlers import FIRST_LIST_WAIT
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.jsonrpc_refusal import Refusal
from cartograph.server.passthrough import ChangeListener, UpdateListener
from cartograph.server.proxy import build_proxy_server
from cartograph.server.runtime.catalog import CatalogRuntime
from cartograph.server.stdio.guard import guarded_stdio, refusal_record
from cartograph.server.stdio.wire import fast_stdio
from cartograph.server.tools import exposed_tools, proxy_tool

logger = logging.getLogger(__name__)

READY_TIMEOUT: Final = 120.0
"""How long a tool call waits for the catalog to finish starting."""
SHUTDOWN_GRACE: Final = 2.0
"""Time for in-flight calls' error results to reach the client after SIGTERM."""

EXIT_GRACE: Final = 3.0
"""After a signal, the upper bound on a clean exit before a hard one."""

MAX_UNAUDITED: Final = 256
"""Wire refusals kept for the audit log while the catalog starts (beyond: not recorded)."""

RuntimeFactory = Callable[[], Awaitable[CatalogRuntime]]


class DeferredHandlers:
    """A tool surface that lists at once and dispatches once the runtime is ready."""

    def __init__(self, catalog: ResolvedCatalog, *, stdio_prefix: str | None = None) -> None:
        self.catalog = catalog
        self.prefix = stdio_prefix
        self._ready = anyio.Event()
        self.handlers: ProxyHandlers | None = None
        self.failure: CartographError | None = None
        self._exposed = exposed_tools(
            catalog.policy.proxy_tools, code_mode=catalog.code_mode.enabled
        )
        self._listeners: list[ChangeListener] = []
        self._update_listeners: list[UpdateListener] = []

    def list_tools(self) -> list[Tool]:
        return [proxy_tool(name, prefix=self.prefix) for name in self._exposed]

    def instructions(self) -> str:
        return ProxyHandlers.describe(self.catalog.name, self._exposed, self.prefix)

    def set_runtime(self, runtime: CatalogRuntime) -> None:
        self.handlers = ProxyHandlers(
            runtime,
            catalog=self.catalog.name,
            policy=self.catalog.policy,
            tool_prefix=self.prefix,
        )
        for listener in self._listeners:
            self.handlers.subscribe_changes(listener)
        for updated in self._update_listeners:
            self.handlers.subscribe_updates(updated)
        self._ready.set()

    def set_failure(self, error: CartographError) -> None:
        self.failure = error
        self._ready.set()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, principal: str | None
    ) -> CallToolResult:
        with anyio.move_on_after(READY_TIMEOUT):
            await self._ready.wait()
        if self.handlers is not None:
            return await self.handlers.call_tool(name, arguments, principal=principal)
        error = self.failure or CartographError(
            "the catalog is still starting; retry in a moment", code=codes.STARTING
        )
        return error_result(error)

    # -- resources and prompts: empty until the catalog is up, then list_changed --------

    def subscribe_changes(self, listener: ChangeListener) -> None:
        self._listeners.append(listener)
        if self.handlers is not None:
            self.handlers.subscribe_changes(listener)

    def subscribe_updates(self, listener: UpdateListener) -> None:
        self._update_listeners.append(listener)
        if self.handlers is not None:
            self.handlers.subscribe_updates(listener)

    async def subscribe_resource(self, uri: str, *, principal: str | None) -> None:
        await (await self._ready_handlers()).subscribe_resource(uri, principal=principal)

    async def unsubscribe_resource(self, uri: str, *, principal: str | None) -> None:
        await (await self._ready_handlers()).unsubscribe_resource(uri, principal=principal)

    async def content_settled(self) -> None:
        """The runtime started and its servers connected, each within its bound."""
        with anyio.move_on_after(FIRST_LIST_WAIT):
            await self._ready.wait()
        if self.handlers is not None:
            await self.handlers.content_settled()

    def list_resources(self) -> list[Resource]:
        return self.handlers.list_resources() if self.handlers is not None else []

    def list_resource_templates(self) -> list[ResourceTemplate]:
        return self.handlers.list_resource_templates() if self.handlers is not None else []

    def list_prompts(self) -> list[Prompt]:
        return self.handlers.list_prompts() if self.handlers is not None else []

    async def read_resource(self, uri: str, *, principal: str | None) -> ReadResourceResult:
        return await (await self._ready_handlers()).read_resource(uri, principal=principal)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, principal: str | None
    ) -> GetPromptResult:
        handlers = await self._ready_handlers()
        return await handlers.get_prompt(name, arguments, principal=principal)

    async def complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        principal: str | None,
    ) -> CompleteResult:
        handlers = await self._ready_handlers()
        return await handlers.complete(ref, argument, context_arguments, principal=principal)

    async def _ready_handlers(self) -> ProxyHandlers:
        with anyio.move_on_after(READY_TIMEOUT):
            await self._ready.wait()
        if self.handlers is None:
            raise self.failure or CartographError(
                "the catalog is still starting; retry in a moment", code=codes.STARTING
            )
        return self.handlers


async def serve_stdio(catalog: ResolvedCatalog, start: RuntimeFactory) -> None:
    """Serve one catalog over this process's stdin/stdout until EOF or a signal."""
    surface = DeferredHandlers(catalog)
    server = build_proxy_server(surface)
    runtime: CatalogRuntime | None = None
    unaudited: list[
        Refusal
    ] = []  # requests refused on the wire before the runtime (its log) was up

    def audit_refusal(refusal: Refusal) -> None:
        if runtime is None:
            if len(unaudited) < MAX_UNAUDITED:
                unaudited.append(refusal)
            return
        runtime.audit.write(refusal_record(catalog.name, refusal))

    async def end_in_flight() -> None:
        # stdin EOF: end in-flight calls with shutting_down while stdout still
        # carries their replies, as SIGTERM does (P-REL-7).
        if runtime is not None:
            logger.info("stdin closed: ending in-flight calls")
            await runtime.gateway.aclose()
            await _drain(runtime)

    async def boot() -> None:
        nonlocal runtime
        try:
            runtime = await start()
        except CartographError as exc:
            logger.error("catalog %s failed to start: %s", catalog.name, exc.message)
            surface.set_failure(exc)
            return
        surface.set_runtime(runtime)
        for refusal in unaudited:
            runtime.audit.write(refusal_record(catalog.name, refusal))
        unaudited.clear()
        # Cards and index are in: discover answers now, upstreams connect behind it.
        try:
            await runtime.connect_upstreams()
        finally:
            startup_gc.settle()  # start-up's objects collectable again (startup_gc.py)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(boot)
            group.start_soon(_on_signal, group.cancel_scope, lambda: runtime)
            async with (
                fast_stdio() as wire,
                guarded_stdio(wire, audit_refusal, end_in_flight) as (
                    read_stream,
                    write_stream,
                ),
            ):
                options = server.create_initialization_options()
                await server.run(read_stream, write_stream, options)
            logger.info("stdin closed; shutting down")
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if runtime is not None:
                await runtime.aclose()


async def _on_signal(
    scope: anyio.CancelScope, current: Callable[[], CatalogRuntime | None]
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            logger.info("signal %s: ending in-flight calls and shutting down", signum)
            runtime = current()
            if runtime is not None:
                # In-flight calls end with a shutting_down error result, which still
                # goes out on stdout before the loop is cancelled.
                await runtime.gateway.aclose()
                await _drain(runtime)
            scope.cancel()
            _exit_soon()
            return


def _exit_soon() -> None:
    """Exit even if a worker thread is still blocked reading stdin.

    The SDK reads stdin in a worker thread that cancellation cannot interrupt;
    with a client that keeps stdin open, the process would linger after
    SIGTERM. Upstreams are closed by now, so a hard exit loses nothing.
    """
    timer = threading.Timer(EXIT_GRACE, os._exit, (0,))
    timer.daemon = True
    timer.start()


async def _drain(runtime: CatalogRuntime) -> None:
    with anyio.move_on_after(SHUTDOWN_GRACE):
        await runtime.gateway.wait_idle()
        await anyio.sleep(0.05)  # let the last error results reach the stdout writer
