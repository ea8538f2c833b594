"""Graceful HTTP shutdown: stop accepting, let calls finish, end the rest, then close (P-REL-7).

uvicorn's own SIGTERM handling waits for connections without knowing which
are calls and which are idle event streams, then re-raises the signal, so the
process died before the catalogs' upstream sessions were closed, and an
in-flight call on a handshake-era session got a dropped stream instead of a
result. ``serve --http`` therefore handles the signals itself:

1. **stop accepting**: the listening sockets close; a request arriving on an
   open connection gets 503 with a JSON-RPC error ``shutting_down``;
2. **grace**: in-flight MCP requests (every POST/DELETE; a GET event stream
   is not a call) get up to ``[http] shutdown_grace`` seconds to finish;
3. **end the rest**: each catalog's gateway ends its in-flight upstream calls
   with a ``shutting_down`` error result (the stdio path does the same) and
   closes every upstream session, so no child process is left; the error
   results get a short bounded time to reach their clients;
4. uvicorn is told to exit: it closes what is left (idle keep-alive
   connections, event streams), then the lifespan ends the MCP sessions.

A second signal during the grace skips straight to step 3.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Final

import anyio
import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from cartograph import error_codes as codes

logger = logging.getLogger(__name__)

SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
"""SIGHUP is not among them: ``serve --http`` reloads the card set on it (``serve.py``)."""
FLUSH_TIMEOUT: Final = 2.0
"""After the gateways ended the remaining calls: time for their error results to go out."""
CLOSE_TIMEOUT: Final = 1  # seconds; uvicorn takes an int
"""uvicorn's own graceful timeout, for what is left once every call has answered."""
# JSON-RPC "invalid request", as the other HTTP-level refusals use.
_INVALID_REQUEST: Final = -32600

EndCalls = Callable[[], Awaitable[None]]
"""Ends a catalog's in-flight upstream calls with ``shutting_down`` and closes its upstreams."""


class Drain:
    """ASGI wrapper that counts in-flight MCP requests and refuses new ones while closing."""

    def __init__(
        self, app: ASGIApp, *, on_refuse: Callable[[Scope], Awaitable[None]] | None = None
    ) -> None:
        self.app = app
        self.on_refuse = on_refuse
        """Told of every request refused while closing (the HTTP refusal audit, P-AUDIT-1)."""
        self.closing = False
        self.in_flight = 0
        self._idle = anyio.Event()
        self._idle.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.closing:
            if self.on_refuse is not None:
                await self.on_refuse(scope)
            await _refusal()(scope, receive, send)
            return
        if scope["method"] == "GET":  # event streams and /health: not calls
            await self.app(scope, receive, send)
            return
        with self._tracked():
            await self.app(scope, receive, send)

    @contextlib.contextmanager
    def _tracked(self) -> Iterator[None]:
        self.in_flight += 1
        if self.in_flight == 1:
            self._idle = anyio.Event()
        try:
            yield
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()

    async def wait_idle(self) -> None:
        """Until no MCP request is in flight."""
        await self._idle.wait()


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
    """Stop accepting, wait out the grace, end what is left, then let uvicorn exit."""
    drain.closing = True
    for listener in server.servers:
        listener.close()
    with grace_scope:
        await drain.wait_idle()
    if drain.in_flight:
        logger.warning("ending %d in-flight request(s) with shutting_down", drain.in_flight)
    with anyio.CancelScope(shield=True):
        for end in end_calls:
            await end()
        with anyio.move_on_after(FLUSH_TIMEOUT):
            await drain.wait_idle()
    server.should_exit = True
