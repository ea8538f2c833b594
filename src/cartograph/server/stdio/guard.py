"""The stdio transport, answering every request the SDK cannot parse (P-REL-11).

The SDK's ``stdio_server`` validates each line and hands what fails to the
server as an exception, which logs it; the request's id is lost and the client
waits forever. :class:`RefusingLines` sits between the wire and the SDK: a
line the SDK's own adapter refuses, but that carries a request id, is not
passed on; its JSON-RPC error (:func:`~cartograph.server.jsonrpc_refusal.refusals_for`)
goes out through the SDK's write stream, so it is serialised with every
other reply. Lines without a recoverable id pass through unchanged.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from cartograph.gateway.audit import AuditRecord, utc_now
from cartograph.server.jsonrpc_refusal import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Refusal,
    refusals_for,
)

REPLY_BUFFER: Final = 64
"""Refusals queued for the writer; a client flooding bad requests waits on its own replies."""
DRAIN_TIMEOUT: Final = 2.0
"""At end of input, how long queued refusals may take to reach the wire."""


Refused = Callable[[Refusal], None]
"""Told of each refusal as it is answered, so it can be audited (P-AUDIT-1)."""

AtEof = Callable[[], Awaitable[None]]
"""Awaited at end of input before the SDK sees it, while replies can still be written."""

_OUTCOMES: Final = {PARSE_ERROR: "parse_error", INVALID_REQUEST: "invalid_request"}


def refusal_record(catalog: str, refusal: Refusal) -> AuditRecord:
    """The audit record of one request refused on the wire (no argument is known)."""
    return AuditRecord(
        time=utc_now(),
        catalog=catalog,
        principal=None,
        proxy_tool="jsonrpc",
        server=None,
        tool=None,
        duration_ms=0.0,
        outcome=_OUTCOMES.get(refusal.code, "invalid_params"),
        arguments=None,
    )


class RefusingLines:
    """Async-iterates the wire's lines, holding back (and answering) refused requests."""

    def __init__(
        self,
        lines: AsyncIterable[str],
        on_refused: Refused | None = None,
        at_eof: AtEof | None = None,
    ) -> None:
        self._lines = lines.__aiter__()
        self._on_refused = on_refused
        self._at_eof = at_eof
        self._send, self._replies = anyio.create_memory_object_stream[Refusal](REPLY_BUFFER)
        self.drained = anyio.Event()

    def __aiter__(self) -> RefusingLines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._lines.__anext__()
            except StopAsyncIteration:
                # Hold the SDK's end of input until what is owed is written: at EOF the
                # server stops, answers every request still in flight with its generic
                # "Connection closed" and closes the write stream. A client that closed
                # only stdin still reads stdout, so in-flight calls end first, with
                # their own error (P-REL-7).
                if self._at_eof is not None:
                    await self._at_eof()
                self._send.close()
                with anyio.move_on_after(DRAIN_TIMEOUT):
                    await self.drained.wait()
                raise
            refusals = _refusals(line)
            if not refusals:
                return line
            for refusal in refusals:
                if self._on_refused is not None:
                    self._on_refused(refusal)
                await self._send.send(refusal)

    async def answer(self, write: Any) -> None:
        """Send each queued refusal through the SDK's write stream until the wire ends."""
        try:
            async with self._replies:
                async for refusal in self._replies:
                    reply = types.JSONRPCError(
                        jsonrpc="2.0",
                        id=refusal.id,
                        error=types.ErrorData(code=refusal.code, message=refusal.message),
                    )
                    try:
                        await write.send(SessionMessage(reply))
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return
        finally:
            self.drained.set()


def _refusals(line: str) -> list[Refusal]:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception:  # whatever the SDK's reader would refuse
        return refusals_for(line)
    return []


@contextlib.asynccontextmanager
async def guarded_stdio(
    wire: tuple[Any, Any] | None,
    on_refused: Refused | None = None,
    at_eof: AtEof | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """``stdio_server`` over ``wire`` (else this process's stdin/stdout), with refusals answered.

    ``at_eof`` runs when input ends, before the SDK is told, so replies still go out.
    """
    async with _stdin(wire) as (stdin, stdout):
        if stdin is None:  # no way to read fd 0 ourselves here: the SDK's own path
            async with stdio_server() as streams:
                yield streams
            return
        guard = RefusingLines(stdin, on_refused, at_eof)
        options: dict[str, Any] = {"stdin": guard}
        if stdout is not None:
            options["stdout"] = stdout
        async with stdio_server(**options) as (read, write), anyio.create_task_group() as group:
            group.start_soon(guard.answer, write)
            try:
                yield read, write
            finally:
                group.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def _stdin(wire: tuple[Any, Any] | None) -> AsyncIterator[tuple[Any, Any]]:
    """The wire's streams; without one, fd 0 read from a duplicate while fd 0 reads null.

    stdout stays the SDK's (None): it claims fd 1 itself and points it at stderr.
    """
    if wire is not None:
        yield wire
        return
    if sys.platform == "win32":
        yield None, None
        return
    private = os.dup(0)
    saved = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    text = io.TextIOWrapper(os.fdopen(private, "rb"), encoding="utf-8", errors="replace")
    try:
        yield anyio.wrap_file(text), None
    finally:
        with contextlib.suppress(OSError):
            os.dup2(saved, 0)
        os.close(saved)
        text.close()
