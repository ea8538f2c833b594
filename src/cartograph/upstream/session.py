"""One live MCP client session to one upstream server.

The SDK's :class:`mcp.Client` is an async context manager, and anyio requires a
context manager to be exited by the task that entered it. A gateway, though,
opens a session in one task and calls through it from many others. So each
:class:`UpstreamSession` is *owned by its own background task*: that task
enters the client, waits until :meth:`UpstreamSession.aclose` asks it to stop,
and exits the client itself. Any task may call :meth:`list_tools` and
:meth:`call_tool` in between.

Failures never escape as an ``ExceptionGroup`` or a raw transport error: they
are translated into :class:`~cartograph.errors.UpstreamError` subclasses with a
stable code, and for stdio servers the message carries the tail of the
server's stderr (with configured secret values redacted, P-LOG-1).

The parts that are not the session's life live beside it: the change
notifications in ``_change_feed.py``, bounded cursor-following in
``_paging.py``, the stdio server's stderr in ``_stderr_log.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, Final, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client._transport import Transport
from mcp.server import Server
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from cartograph import error_codes as codes
from cartograph.catalog.model import ServerDef, ToolDef
from cartograph.config.model import ServerConfig
from cartograph.errors import UpstreamError, UpstreamRefused, UpstreamUnavailable
from cartograph.upstream._change_feed import (
    ChangeFeed,
    ContentChangedCallback,
    ResourceUpdatedCallback,
    ToolsChangedCallback,
)
from cartograph.upstream._errors import translate_error
from cartograph.upstream._paging import MAX_LIST_PAGES, paged
from cartograph.upstream._stderr_log import StderrLog
from cartograph.upstream.content import ContentKind, ContentListing
from cartograph.upstream.input_requests import InFlight, InputAnswerer
from cartograph.upstream.transports import build_transport, describe_endpoint

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT: Final = 15.0
"""Upper bound on waiting for the owner task; the SDK's stdio shutdown is itself bounded (~6 s)."""

InProcessTarget = Server[Any]

_RPC_TRANSPORT_CODES: Final = frozenset({types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT})
"""JSON-RPC error codes that say the connection failed, not that the server said no."""

_Item = TypeVar("_Item")


class UpstreamSession:
    """A pooled-ready client session to one upstream MCP server.

    Create with :meth:`open`; always :meth:`aclose`. ``alive`` turns false when
    the owner task ends (closed, transport lost) or a call finds the
    connection closed; the gateway then opens a fresh session.
    """

    def __init__(self, cfg: ServerConfig) -> None:
        self.cfg = cfg
        self.name = cfg.name
        self.protocol_version: str | None = None
        self.instructions: str | None = None
        self.server_version: str | None = None
        self.last_list_bytes = 0
        self._client: Client | None = None
        self._alive = False
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None
        self._changes = ChangeFeed(cfg.name, ask_for_content=self._capabilities_unknown)
        self._auth: httpx2.Auth | None = None
        self._stderr: StderrLog | None = None
        self.last_error: UpstreamError | None = None
        self._answerer: InputAnswerer | None = None
        self._in_flight = InFlight(cfg.name)
        """Calls running here and their downstream callers: who a request for input is for."""

    # -- lifecycle -----------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        cfg: ServerConfig,
        *,
        target: InProcessTarget | Transport | None = None,
        auth: httpx2.Auth | None = None,
        answerer: InputAnswerer | None = None,
    ) -> UpstreamSession:
        """Connect and negotiate within ``cfg.connect_timeout``.

        ``target`` replaces the transport built from ``cfg`` (tests run a
        low-level ``Server`` in process this way); ``auth`` replaces the HTTP
        auth ``cfg`` implies (``auth login`` passes its interactive OAuth flow);
        ``answerer`` takes the server's sampling and elicitation requests, and the
        session declares those capabilities only with it (``input_requests.py``).

        Raises:
            UpstreamUnavailable: the server could not be started or reached,
                or it exited during start-up (stderr tail included).
            UpstreamTimeout: no handshake within the connect timeout.
            UpstreamProtocolError: the server answered the handshake wrongly.
        """
        session = cls(cfg)
        session._auth = auth
        session._answerer = answerer
        await session._start(target)
        return session

    async def _start(self, target: InProcessTarget | Transport | None) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.create_task(self._own(target, ready), name=f"upstream:{self.name}")
        try:
            await ready
        except BaseException:
            # Cancelled or failed while connecting: stop the owner mid-handshake.
            self._closing.set()
            if not self._owner.done():
                self._owner.cancel()
            await self._join_owner()
            self._close_stderr()
            raise

    async def _own(
        self, target: InProcessTarget | Transport | None, ready: asyncio.Future[None]
    ) -> None:
        """The owner task: enter the client, hold it open, exit it on request.

        The connect deadline is a cancel scope *around* the exit stack: the
        client enters task groups of its own, so a scope opened inside the
        stack could not be closed before them.
        """
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.cfg.connect_timeout)
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    client = await self._enter_client(stack, target)
                    scope.deadline = math.inf
                    self._connected(client)
                    ready.set_result(None)
                    await self._hold(client)
            if scope.cancelled_caught and not ready.done():
                raise TimeoutError
        except BaseException as exc:  # translated, never lost
            self._settle(exc, ready)
            if isinstance(exc, asyncio.CancelledError) and not self._closing.is_set():
                raise
        finally:
            self._alive = False
            self._client = None

    async def _hold(self, client: Client) -> None:
        """Keep the session open (and its list_changed stream running) until closed."""
        self._alive = True
        async with anyio.create_task_group() as tasks:
            if self._changes.wants_listen(client):
                tasks.start_soon(self._changes.listen, client)
            await self._closing.wait()
            tasks.cancel_scope.cancel()

    def _settle(self, exc: BaseException, ready: asyncio.Future[None]) -> None:
        error = self._translate(exc, phase="connect" if not ready.done() else "session")
        self.last_error = error
        if not ready.done():
            ready.set_exception(error)
        elif not isinstance(exc, asyncio.CancelledError):
            logger.warning("upstream %s: session ended: %s", self.name, error.message)

    async def _enter_client(
        self, stack: AsyncExitStack, target: InProcessTarget | Transport | None
    ) -> Client:
        if target is None:
            if self.cfg.transport == "stdio":
                self._stderr = StderrLog(self.cfg)  # closed in aclose(), or when collected
            errlog = self._stderr.handle if self._stderr is not None else None
            target = await build_transport(self.cfg, stack, stderr=errlog, auth=self._auth)
        asks = self._in_flight.callbacks(self._answerer)
        client = Client(
            target,
            mode=self.cfg.protocol,
            message_handler=self._changes.on_message,
            client_info=types.Implementation(name="cartograph", version=_version()),
            cache=None,
            sampling_callback=asks.sampling,
            elicitation_callback=asks.elicitation,
        )
        await stack.enter_async_context(client)
        return client

    def _connected(self, client: Client) -> None:
        self._client = client
        self.protocol_version = client.protocol_version
        self.instructions = client.instructions
        info = client.server_info
        self.server_version = info.version if info is not None else None

    @property
    def alive(self) -> bool:
        return self._alive and not self._closing.is_set()

    async def aclose(self) -> None:
        """Close the session and, for stdio, stop the server process tree."""
        self._closing.set()
        await self._join_owner()
        self._close_stderr()

    async def _join_owner(self) -> None:
        owner = self._owner
        if owner is None or owner.done():
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
            await asyncio.wait({owner})
        if not owner.done():
            owner.cancel()

    def _close_stderr(self) -> None:
        if self._stderr is not None:
            self._stderr.close()

    # -- requests ------------------------------------------------------------------

    async def list_tools(self) -> ServerDef:
        """Every tool the server lists, following pagination cursors.

        Raises:
            UpstreamProtocolError: a repeated cursor or more than
                :data:`MAX_LIST_PAGES` pages, or a malformed listing.
        """
        client = self._require_client()
        sizes: list[int] = []

        def tool_defs(page: types.ListToolsResult) -> list[ToolDef]:
            wires = [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools
            ]
            sizes.extend(len(json.dumps(w, ensure_ascii=False).encode("utf-8")) for w in wires)
            return [ToolDef.model_validate(wire) for wire in wires]

        try:
            with anyio.fail_after(self.cfg.call_timeout):
                tools = await paged(
                    self.name,
                    "tools/list",
                    lambda c: client.list_tools(cursor=c, cache_mode="bypass"),
                    tool_defs,
                )
        except UpstreamError:
            raise
        except asyncio.CancelledError:
            raise  # the caller's cancellation, not an upstream failure
        except Exception as exc:
            raise self._translate(exc, phase="tools/list") from None
        self.last_list_bytes = sum(sizes)
        return ServerDef(
            name=self.name,
            description=self.instructions or "",
            tools=tuple(tools),
            transport=self.cfg.transport,
            endpoint=describe_endpoint(self.cfg),
            publisher=self.cfg.publisher,
        )

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout: float,  # noqa: ASYNC109 - the interface names it; enforced with fail_after
        progress_callback: ProgressFnT | None = None,
    ) -> types.CallToolResult:
        """Call one tool with a hard deadline (P-REL-1).

        A tool that fails *as a tool* comes back as a result with
        ``is_error=True``, unchanged. Transport and protocol failures raise
        :class:`UpstreamError`; cancellation is re-raised untouched.
        """
        client = self._require_client()
        try:
            with anyio.fail_after(timeout), self._in_flight.calling(name):
                return await client.call_tool(
                    name,
                    arguments or {},
                    read_timeout_seconds=timeout,
                    progress_callback=progress_callback,
                )
        except asyncio.CancelledError:
            # The caller's cancellation (a downstream cancel, the gateway's own deadline,
            # shutdown) propagates as itself: it says nothing about this session's health,
            # so it must neither mark the session dead nor count against the upstream.
            raise
        except Exception as exc:
            raise self._translate(exc, phase=f"tools/call {name}") from None

    # -- resources and prompts -------------------------------------------------------

    @property
    def offers(self) -> frozenset[ContentKind]:
        """Which of resources and prompts the server advertised in its capabilities."""
        client = self._client
        if client is None:
            return frozenset()
        if self._capabilities_unknown:
            return frozenset(("resources", "prompts"))  # ask; "method not found" means none
        caps = client.server_capabilities
        kinds: set[ContentKind] = set()
        if caps.resources is not None:
            kinds.add("resources")
        if caps.prompts is not None:
            kinds.add("prompts")
        return frozenset(kinds)

    @property
    def _capabilities_unknown(self) -> bool:
        """Pinned to a 2026-07-28 version, the SDK skips ``server/discover``: no capabilities."""
        return self.cfg.protocol not in ("auto", "legacy")

    async def list_content(self) -> ContentListing:
        """Every resource, resource template and prompt the server advertises it offers.

        Raises :class:`UpstreamError` like :meth:`list_tools` (pagination bounded).
        """
        client = self._require_client()
        offers = self.offers
        resources: list[types.Resource] = []
        templates: list[types.ResourceTemplate] = []
        prompts: list[types.Prompt] = []
        try:
            with anyio.fail_after(self.cfg.call_timeout):
                probing = self._capabilities_unknown
                if "resources" in offers:
                    resources = await paged(
                        self.name,
                        "resources/list",
                        lambda c: client.list_resources(cursor=c, cache_mode="bypass"),
                        lambda page: page.resources,
                        optional=probing,
                    )
                    templates = await paged(
                        self.name,
                        "resources/templates/list",
                        lambda c: client.list_resource_templates(cursor=c, cache_mode="bypass"),
                        lambda page: page.resource_templates,
                        optional=True,
                    )
                if "prompts" in offers:
                    prompts = await paged(
                        self.name,
                        "prompts/list",
                        lambda c: client.list_prompts(cursor=c, cache_mode="bypass"),
                        lambda page: page.prompts,
                        optional=probing,
                    )
        except UpstreamError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self._translate(exc, phase="resources/prompts list") from None
        return ContentListing(tuple(resources), tuple(templates), tuple(prompts))

    async def read_resource(
        self,
        uri: str,
        *,
        timeout: float,  # noqa: ASYNC109 - as call_tool
    ) -> types.ReadResourceResult:
        """Read one resource; the upstream's own "no such resource" is :class:`UpstreamRefused`."""
        client = self._require_client()
        return await self._request(
            f"resources/read {uri}",
            timeout,
            lambda: client.read_resource(uri, cache_mode="bypass"),
        )

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None,
        *,
        timeout: float,  # noqa: ASYNC109 - as call_tool
    ) -> types.GetPromptResult:
        """Render one prompt; an unknown prompt or bad arguments raise :class:`UpstreamRefused`."""
        client = self._require_client()
        return await self._request(
            f"prompts/get {name}", timeout, lambda: client.get_prompt(name, arguments)
        )

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        timeout: float,  # noqa: ASYNC109 - as call_tool
    ) -> types.CompleteResult:
        """Complete one argument of a prompt or resource template (``completion/complete``)."""
        client = self._require_client()
        pair = {"name": argument.name, "value": argument.value}
        return await self._request(
            f"completion/complete {argument.name}",
            timeout,
            lambda: client.complete(ref, pair, context_arguments),
        )

    async def subscribe_resource(
        self,
        uri: str,
        *,
        timeout: float,  # noqa: ASYNC109 - as call_tool
    ) -> None:
        """``resources/subscribe``: the upstream then sends ``notifications/resources/updated``.

        Sent as a plain request: the SDK's helper warns that the 2026-07-28 protocol
        dropped the method; such an upstream says "method not found" (:class:`UpstreamRefused`).
        """
        await self._subscription("resources/subscribe", uri, timeout)

    async def unsubscribe_resource(
        self,
        uri: str,
        *,
        timeout: float,  # noqa: ASYNC109 - as call_tool
    ) -> None:
        """``resources/unsubscribe``: the upstream stops telling this session of ``uri``."""
        await self._subscription("resources/unsubscribe", uri, timeout)

    async def _subscription(self, method: str, uri: str, timeout: float) -> None:  # noqa: ASYNC109
        client = self._require_client()
        request: types.SubscribeRequest | types.UnsubscribeRequest
        if method == "resources/subscribe":
            request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        else:
            request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
        await self._request(
            f"{method} {uri}",
            timeout,
            lambda: client.session.send_request(request, types.EmptyResult),
        )

    async def _request(
        self,
        phase: str,
        timeout: float,  # noqa: ASYNC109 - enforced with fail_after, as call_tool
        send: Callable[[], Awaitable[_Item]],
    ) -> _Item:
        try:
            with anyio.fail_after(timeout), self._in_flight.calling(phase.partition(" ")[0]):
                return await send()
        except asyncio.CancelledError:
            raise
        except MCPError as exc:
            if exc.error.code in _RPC_TRANSPORT_CODES:
                raise self._translate(exc, phase=phase) from None
            raise UpstreamRefused(
                f"upstream {self.name!r} refused {phase}: {exc.error.message}",
                server=self.name,
                rpc_code=exc.error.code,
            ) from None
        except Exception as exc:
            raise self._translate(exc, phase=phase) from None

    def on_content_changed(self, callback: ContentChangedCallback) -> None:
        """Register a callback for ``resources/list_changed`` and ``prompts/list_changed``."""
        self._changes.on_content_changed(callback)

    def on_resource_updated(self, callback: ResourceUpdatedCallback) -> None:
        """Register a callback for the upstream's ``notifications/resources/updated``."""
        self._changes.on_resource_updated(callback)

    def on_tools_changed(self, callback: ToolsChangedCallback) -> None:
        """Register a callback for the upstream's ``tools/list_changed``."""
        self._changes.on_tools_changed(callback)

    def _require_client(self) -> Client:
        client = self._client
        if client is None or not self.alive:
            raise UpstreamUnavailable(
                f"upstream {self.name!r}: session is closed; open a new one",
                code=codes.UPSTREAM_SESSION_CLOSED,
                server=self.name,
            )
        return client

    # -- errors --------------------------------------------------------------------

    def _translate(self, exc: BaseException, *, phase: str) -> UpstreamError:
        error = translate_error(
            exc,
            cfg=self.cfg,
            phase=phase,
            stderr_tail=self._stderr.tail() if self._stderr is not None else "",
        )
        if error.code in {codes.UPSTREAM_CLOSED, codes.UPSTREAM_EXITED}:
            self._alive = False
        return error


def _version() -> str:
    from cartograph import __version__

    return __version__


__all__ = [
    "MAX_LIST_PAGES",
    "ContentChangedCallback",
    "ContentKind",
    "ContentListing",
    "InProcessTarget",
    "ToolsChangedCallback",
    "UpstreamSession",
]
