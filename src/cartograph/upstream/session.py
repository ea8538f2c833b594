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
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import math
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any, Final, Protocol, TextIO, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client._transport import Transport
from mcp.client.session import IncomingMessage
from mcp.server import Server
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    PromptsListChanged,
    ResourcesListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from cartograph import error_codes as codes
from cartograph.catalog.model import ServerDef, ToolDef
from cartograph.config.model import ServerConfig
from cartograph.errors import (
    UpstreamError,
    UpstreamProtocolError,
    UpstreamRefused,
    UpstreamUnavailable,
)
from cartograph.upstream._errors import translate_error
from cartograph.upstream.content import ContentKind, ContentListing
from cartograph.upstream.transports import build_transport, describe_endpoint

logger = logging.getLogger(__name__)

MAX_LIST_PAGES: Final = 100
"""A paginator that never ends must not hang ``tools/list``."""

CLOSE_TIMEOUT: Final = 15.0
"""Upper bound on waiting for the owner task; the SDK's stdio shutdown is itself bounded (~6 s)."""

STDERR_TAIL_BYTES: Final = 2048

ToolsChangedCallback = Callable[[str], Awaitable[None] | None]
"""Called with the server name when the upstream reports ``tools/list_changed``."""

ContentChangedCallback = Callable[[str, ContentKind], Awaitable[None] | None]
"""Called with the server name and what changed on ``resources``/``prompts/list_changed``."""

InProcessTarget = Server[Any]

_RPC_TRANSPORT_CODES: Final = frozenset({types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT})
"""JSON-RPC error codes that say the connection failed, not that the server said no."""

_Item = TypeVar("_Item")


class _Page(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


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
        self._callbacks: list[ToolsChangedCallback] = []
        self._content_callbacks: list[ContentChangedCallback] = []
        self._auth: httpx2.Auth | None = None
        self._stderr: TextIO | None = None
        self.last_error: UpstreamError | None = None

    # -- lifecycle -----------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        cfg: ServerConfig,
        *,
        target: InProcessTarget | Transport | None = None,
        auth: httpx2.Auth | None = None,
    ) -> UpstreamSession:
        """Connect and negotiate within ``cfg.connect_timeout``.

        ``target`` replaces the transport built from ``cfg`` (tests run a
        low-level ``Server`` in process this way); ``auth`` replaces the HTTP
        auth ``cfg`` implies (``auth login`` passes its interactive OAuth flow).

        Raises:
            UpstreamUnavailable: the server could not be started or reached,
                or it exited during start-up (stderr tail included).
            UpstreamTimeout: no handshake within the connect timeout.
            UpstreamProtocolError: the server answered the handshake wrongly.
        """
        session = cls(cfg)
        session._auth = auth
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
            if self._wants_listen(client):
                tasks.start_soon(self._listen, client)
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
                # Kept open for the session's life; closed in aclose(), or when a
                # session dropped without aclose() is collected (else the file's own
                # finaliser raises a ResourceWarning in whatever runs next).
                self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
                    mode="w+", encoding="utf-8", errors="replace"
                )
                weakref.finalize(self, _close_quietly, self._stderr)
            target = await build_transport(self.cfg, stack, stderr=self._stderr, auth=self._auth)
        client = Client(
            target,
            mode=self.cfg.protocol,
            message_handler=self._on_message,
            client_info=types.Implementation(name="cartograph", version=_version()),
            cache=None,
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
            _close_quietly(self._stderr)

    # -- requests ------------------------------------------------------------------

    async def list_tools(self) -> ServerDef:
        """Every tool the server lists, following pagination cursors.

        Raises:
            UpstreamProtocolError: a repeated cursor or more than
                :data:`MAX_LIST_PAGES` pages, or a malformed listing.
        """
        client = self._require_client()
        tools: list[ToolDef] = []
        size = 0
        cursor: str | None = None
        seen: set[str] = set()
        try:
            with anyio.fail_after(self.cfg.call_timeout):
                for _ in range(MAX_LIST_PAGES):
                    page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                    for tool in page.tools:
                        wire = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                        size += len(json.dumps(wire, ensure_ascii=False).encode("utf-8"))
                        tools.append(ToolDef.model_validate(wire))
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                    if cursor in seen:
                        raise self._protocol_error(f"tools/list repeated cursor {cursor!r}")
                    seen.add(cursor)
                else:
                    raise self._protocol_error(f"tools/list went past {MAX_LIST_PAGES} pages")
        except UpstreamError:
            raise
        except asyncio.CancelledError:
            raise  # the caller's cancellation, not an upstream failure
        except Exception as exc:
            raise self._translate(exc, phase="tools/list") from None
        self.last_list_bytes = size
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
            with anyio.fail_after(timeout):
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
                    resources = await self._paged(
                        "resources/list",
                        lambda c: client.list_resources(cursor=c, cache_mode="bypass"),
                        lambda page: page.resources,
                        optional=probing,
                    )
                    templates = await self._paged(
                        "resources/templates/list",
                        lambda c: client.list_resource_templates(cursor=c, cache_mode="bypass"),
                        lambda page: page.resource_templates,
                        optional=True,
                    )
                if "prompts" in offers:
                    prompts = await self._paged(
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

    async def _paged(
        self,
        method: str,
        fetch: Callable[[str | None], Awaitable[_Page]],
        items: Callable[[Any], Sequence[_Item]],
        *,
        optional: bool = False,
    ) -> list[_Item]:
        """Follow ``method``'s cursors; ``optional``: a server without the method lists nothing."""
        found: list[_Item] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_LIST_PAGES):
            try:
                page = await fetch(cursor)
            except MCPError as exc:
                if optional and exc.error.code == types.METHOD_NOT_FOUND:
                    return found
                raise
            found.extend(items(page))
            cursor = page.next_cursor
            if cursor is None:
                return found
            if cursor in seen:
                raise self._protocol_error(f"{method} repeated cursor {cursor!r}")
            seen.add(cursor)
        raise self._protocol_error(f"{method} went past {MAX_LIST_PAGES} pages")

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

    async def _request(
        self,
        phase: str,
        timeout: float,  # noqa: ASYNC109 - enforced with fail_after, as call_tool
        send: Callable[[], Awaitable[_Item]],
    ) -> _Item:
        try:
            with anyio.fail_after(timeout):
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
        self._content_callbacks.append(callback)

    def on_tools_changed(self, callback: ToolsChangedCallback) -> None:
        """Register a callback for the upstream's ``tools/list_changed``."""
        self._callbacks.append(callback)

    def _require_client(self) -> Client:
        client = self._client
        if client is None or not self.alive:
            raise UpstreamUnavailable(
                f"upstream {self.name!r}: session is closed; open a new one",
                code=codes.UPSTREAM_SESSION_CLOSED,
                server=self.name,
            )
        return client

    # -- notifications -------------------------------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        """Handshake-era servers deliver ``tools/list_changed`` here.

        The SDK also tees every ``subscriptions/listen`` event to this handler;
        those are :meth:`_listen`'s to report, or each change would fire twice.
        """
        if _from_listen_stream(message):
            return
        if isinstance(message, types.ToolListChangedNotification):
            await self._fire_tools_changed()
        elif isinstance(message, types.ResourceListChangedNotification):
            await self._fire_content_changed("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            await self._fire_content_changed("prompts")

    def _wants_listen(self, client: Client) -> bool:
        """2026-07-28 servers deliver list changes only on a ``subscriptions/listen`` stream."""
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        return any(self._listen_filter(client).values())

    def _listen_filter(self, client: Client) -> dict[str, bool]:
        wanted = _listen_filter(client.server_capabilities)
        if self._capabilities_unknown:  # ask for content changes; the ack says what is honoured
            wanted.update(resources_list_changed=True, prompts_list_changed=True)
        return wanted

    async def _listen(self, client: Client) -> None:
        wanted = self._listen_filter(client)
        try:
            async with client.listen(
                tools_list_changed=wanted["tools_list_changed"],
                resources_list_changed=wanted["resources_list_changed"],
                prompts_list_changed=wanted["prompts_list_changed"],
            ) as subscription:
                async for event in subscription:
                    if isinstance(event, ResourcesListChanged):
                        await self._fire_content_changed("resources")
                    elif isinstance(event, PromptsListChanged):
                        await self._fire_content_changed("prompts")
                    else:
                        await self._fire_tools_changed()
        except Exception as exc:  # a lost stream must not end the session
            logger.info("upstream %s: list_changed stream ended: %s", self.name, exc)

    async def _fire_content_changed(self, kind: ContentKind) -> None:
        for callback in list(self._content_callbacks):
            try:
                outcome = callback(self.name, kind)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("upstream %s: %s_changed callback failed", self.name, kind)

    async def _fire_tools_changed(self) -> None:
        for callback in list(self._callbacks):
            try:
                outcome = callback(self.name)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("upstream %s: tools_changed callback failed", self.name)

    # -- errors --------------------------------------------------------------------

    def _translate(self, exc: BaseException, *, phase: str) -> UpstreamError:
        error = translate_error(
            exc,
            cfg=self.cfg,
            phase=phase,
            stderr_tail=self._stderr_tail(),
        )
        if error.code in {codes.UPSTREAM_CLOSED, codes.UPSTREAM_EXITED}:
            self._alive = False
        return error

    def _protocol_error(self, what: str) -> UpstreamProtocolError:
        return UpstreamProtocolError(
            f"upstream {self.name!r}: {what}", code=codes.UPSTREAM_PROTOCOL, server=self.name
        )

    def _stderr_tail(self) -> str:
        handle = self._stderr
        if handle is None or handle.closed:
            return ""
        try:
            handle.flush()
            end = handle.seek(0, 2)
            handle.seek(max(0, end - STDERR_TAIL_BYTES))
            tail = handle.read()
            handle.seek(end)
        except (OSError, ValueError):
            return ""
        return _redact(tail.strip(), self.cfg)


def _close_quietly(handle: TextIO) -> None:
    with contextlib.suppress(OSError):
        handle.close()


def _from_listen_stream(message: IncomingMessage) -> bool:
    """A 2026-07-28 listen-stream event carries its subscription id in ``_meta``."""
    params = getattr(message, "params", None)
    meta = getattr(params, "meta", None) if params is not None else None
    return meta is not None and SUBSCRIPTION_ID_META_KEY in meta


def _listen_filter(caps: types.ServerCapabilities) -> dict[str, bool]:
    """The ``subscriptions/listen`` kinds worth asking for: those the server says change."""
    return {
        "tools_list_changed": bool(caps.tools is not None and caps.tools.list_changed),
        "resources_list_changed": bool(caps.resources is not None and caps.resources.list_changed),
        "prompts_list_changed": bool(caps.prompts is not None and caps.prompts.list_changed),
    }


def _redact(text: str, cfg: ServerConfig) -> str:
    """Configured secrets never reach a stderr tail (P-LOG-1; which: ``config/secrets.py``)."""
    for value in cfg.secret_values():
        if len(value) >= 4:
            text = text.replace(value, "***")
    return text


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
