"""Graceful HTTP shutdown: refuse new work, answer what runs, end the rest, then close (P-REL-7).

uvicorn's own SIGTERM handling waits for connections without knowing which
are calls and which are idle event streams, then re-raises the signal, so the
process died before the catalogs' upstream sessions were closed, and an
in-flight call on a handshake-era session got a dropped stream instead of a
result. ``serve --http`` therefore handles the signals itself:

1. **refuse new work, keep the callers**: the listener stays open, because a
   call's answer is not delivered until its client has what it needs to take
   it: the SDK client opens a new connection after a result to list tools and
   check the result's schema (issue 24: with the listener closed, 4 calls that
   finished ``ok`` inside the grace all failed in their clients with
   ``ConnectError``). So a session that had a request in flight when the drain
   began, or finished one just before, stays served; a sessionless (2026-era)
   request is answered when it starts no work (a listing, ``ping``, a
   response or notification); everything else, a new session first, gets 503
   with a JSON-RPC error ``shutting_down``;
2. **grace**: in-flight MCP requests (every POST/DELETE; a GET event stream
   is not a call) get up to ``[http] shutdown_grace`` seconds to finish; the
   drain is over once no request has been in flight for :data:`DRAIN_QUIET`
   (so the follow-ups an answer causes are answered too);
3. **end the rest**: each catalog's gateway ends its in-flight upstream calls
   with a ``shutting_down`` error result (the stdio path does the same) and
   closes every upstream session, so no child process is left; the error
   results get a short bounded time to reach their clients;
4. the log says how many requests were answered and how many ended, and
   uvicorn is told to exit: it closes the listener and what is left (idle
   keep-alive connections, event streams), then the lifespan ends the MCP
   sessions.

A second signal during the grace skips straight to step 3.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio
import uvicorn
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cartograph import error_codes as codes
from cartograph.server.http._sessions import MCP_SESSION_ID_HEADER, opens_session

logger = logging.getLogger(__name__)

SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
"""SIGHUP is not among them: ``serve --http`` reloads the card set on it (``serve.py``)."""
FLUSH_TIMEOUT: Final = 2.0
"""After the gateways ended the remaining calls: time for their error results to go out."""
CLOSE_TIMEOUT: Final = 1  # seconds; uvicorn takes an int
"""uvicorn's own graceful timeout, for what is left once every call has answered."""
DRAIN_QUIET: Final = 0.5
"""Seconds with nothing in flight that end the drain (an answer's follow-up takes milliseconds)."""
DRAIN_READS: Final = frozenset(
    {"ping", "tools/list", "resources/list", "resources/templates/list", "prompts/list"}
)
"""Requests a sessionless client may still make while draining: they start no work."""
_PEEK_LIMIT: Final = 1024 * 1024
"""A sessionless request's body read to find its method while draining; larger is refused."""
# JSON-RPC "invalid request", as the other HTTP-level refusals use.
_INVALID_REQUEST: Final = -32600

EndCalls = Callable[[], Awaitable[None]]
"""Ends a catalog's in-flight upstream calls with ``shutting_down`` and closes its upstreams."""


@dataclass
class DrainCounts:
    """What a drain did, for its closing log line."""

    in_flight: int = 0
    """MCP requests in flight when the drain began."""
    answered: int = 0
    """Of those, answered within the grace."""
    ended: int = 0
    """Requests still running at the end of the grace, ended with ``shutting_down``."""
    follow_ups: int = 0
    """Requests served during the drain (an answered call's tool listing, a session's DELETE)."""
    refused: int = 0


class Drain:
    """ASGI wrapper that counts in-flight MCP requests and, while closing, refuses new work."""

    def __init__(
        self, app: ASGIApp, *, on_refuse: Callable[[Scope], Awaitable[None]] | None = None
    ) -> None:
        self.app = app
        self.on_refuse = on_refuse
        """Told of every request refused while closing (the HTTP refusal audit, P-AUDIT-1)."""
        self.closing = False
        self.ending = False
        self.in_flight = 0
        self.counts = DrainCounts()
        self._sessions: dict[str, int] = {}  # session id -> its requests in flight
        self._recent: deque[tuple[float, str]] = deque()  # sessions answered within DRAIN_QUIET
        self._kept: frozenset[str] = frozenset()
        self._idle = anyio.Event()
        self._idle.set()
        self._started = anyio.Event()

    def begin(self) -> None:
        """Start draining: from now on only the sessions with calls in flight are served."""
        self._forget_before(anyio.current_time() - DRAIN_QUIET)
        self._kept = frozenset(self._sessions) | {session for _, session in self._recent}
        self.counts.in_flight = self.in_flight
        self.closing = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.closing:
            admitted, receive = await self._admits(scope, receive)
            if not admitted:
                self.counts.refused += 1
                if self.on_refuse is not None:
                    await self.on_refuse(scope)
                await _refusal()(scope, receive, send)
                return
        if scope["method"] == "GET":  # event streams and /health: not calls
            await self.app(scope, receive, send)
            return
        with self._tracked(Headers(scope=scope).get(MCP_SESSION_ID_HEADER)):
            await self.app(scope, receive, send)

    async def _admits(self, scope: Scope, receive: Receive) -> tuple[bool, Receive]:
        """Whether a request that arrives while draining is served (module docstring, step 1)."""
        headers = Headers(scope=scope)
        session = headers.get(MCP_SESSION_ID_HEADER)
        if session is not None:
            return session in self._kept, receive
        if scope["method"] != "POST" or opens_session(headers):
            return False, receive
        body, replay = await _peek_body(receive)
        return body is not None and _starts_no_work(body), replay

    @contextlib.contextmanager
    def _tracked(self, session: str | None) -> Iterator[None]:
        during_drain, self.in_flight = self.closing, self.in_flight + 1
        if self.in_flight == 1:
            self._idle = anyio.Event()
        self._started.set()
        if session is not None:
            self._sessions[session] = self._sessions.get(session, 0) + 1
        try:
            yield
        finally:
            self.in_flight -= 1
            if session is not None:
                self._finished(session)
            self._count(during_drain)
            if self.in_flight == 0:
                self._idle.set()

    def _finished(self, session: str) -> None:
        left = self._sessions.pop(session) - 1
        if left:
            self._sessions[session] = left
        now = anyio.current_time()
        self._recent.append((now, session))
        self._forget_before(now - DRAIN_QUIET)

    def _forget_before(self, when: float) -> None:
        while self._recent and self._recent[0][0] < when:
            self._recent.popleft()

    def _count(self, during_drain: bool) -> None:
        if not self.closing:
            return
        if self.ending:
            self.counts.ended += 1
        elif during_drain:
            self.counts.follow_ups += 1
        else:
            self.counts.answered += 1

    async def wait_idle(self) -> None:
        """Until no MCP request is in flight."""
        await self._idle.wait()

    async def wait_settled(self, quiet: float = DRAIN_QUIET) -> None:
        """Until no MCP request has been in flight for ``quiet`` seconds."""
        while True:
            await self._idle.wait()
            started = self._started = anyio.Event()
            with anyio.move_on_after(quiet) as scope:
                await started.wait()
            if scope.cancelled_caught:
                return


async def _peek_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The request body (None past :data:`_PEEK_LIMIT`) and a ``receive`` that replays it."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None, receive
        size += len(message.get("body", b""))
        if size > _PEEK_LIMIT:
            return None, receive
        if not message.get("more_body", False):
            break
    body = b"".join(m.get("body", b"") for m in messages)
    pending = deque(messages)

    async def replay() -> Message:
        return pending.popleft() if pending else await receive()

    return body, replay


def _starts_no_work(body: bytes) -> bool:
    """A JSON-RPC response, notification, or a request in :data:`DRAIN_READS`."""
    try:
        message: Any = json.loads(body)
    except ValueError:
        return False
    if not isinstance(message, dict):
        return False
    method = message.get("method")
    return method is None or "id" not in message or method in DRAIN_READS


def _refusal() -> JSONResponse:
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": _INVALID_REQUEST,
            "message": "the proxy is shutting down; retry against another instance or later",
            "data": {"code": codes.SHUTTING_DOWN},
        },
    }
    return JSONResponse(body, status_code=503, headers={"Connection": "close"})


class Server(uvicorn.Server):
    """uvicorn without its signal handlers: :func:`shut_down_on_signal` drains first."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def shut_down_on_signal(
    server: uvicorn.Server, drain: Drain, end_calls: Sequence[EndCalls], grace: float
) -> None:
    """Wait for SIGTERM/SIGINT, then run the shutdown sequence (module docstring).

    Signals can only be received on the main thread; elsewhere (an embedding
    application, tests serving from a thread) this does nothing and the caller
    stops the server by cancellation or ``server.should_exit``.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    with anyio.open_signal_receiver(*SIGNALS) as signals:
        async for signum in signals:
            logger.warning("signal %s: draining in-flight calls (grace %gs)", signum, grace)
            break
        else:  # pragma: no cover - the receiver never ends on its own
            return
        async with anyio.create_task_group() as group:
            grace_scope = anyio.CancelScope(deadline=anyio.current_time() + grace)

            async def second_signal() -> None:
                async for _ in signals:
                    logger.warning("second signal: ending in-flight calls now")
                    grace_scope.cancel()
                    return

            group.start_soon(second_signal)
            await shut_down(server, drain, end_calls, grace_scope)
            group.cancel_scope.cancel()


async def shut_down(
    server: uvicorn.Server,
    drain: Drain,
    end_calls: Sequence[EndCalls],
    grace_scope: anyio.CancelScope,
) -> None:
    """Refuse new work, wait out the grace, end what is left, log the counts, let uvicorn exit."""
    drain.begin()
    with grace_scope:
        await drain.wait_settled()
    if drain.in_flight:
        logger.warning("ending %d in-flight request(s) with shutting_down", drain.in_flight)
    with anyio.CancelScope(shield=True):
        drain.ending = True
        for end in end_calls:
            await end()
        with anyio.move_on_after(FLUSH_TIMEOUT):
            await drain.wait_settled()
    counts = drain.counts
    logger.warning(
        "drain: %d in-flight request(s) answered within the grace, %d ended with shutting_down; "
        "%d follow-up request(s) served, %d refused",
        counts.answered,
        counts.ended,
        counts.follow_ups,
        counts.refused,
    )
    server.should_exit = True
