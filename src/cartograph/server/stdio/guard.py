"""The stdio transport, answering every request the SDK cannot parse (P-REL-11).

The SDK's ``stdio_server`` validates each line and hands what fails to the
server as an exception, which logs it; the request's id is lost and the client
waits forever. :class:`RefusingLines` sits between the wire and the SDK: a
line the SDK's own adapter refuses, but that carries a request id, is not
passed on; its JSON-RPC error (:func:`~cartograph.server.jsonrpc_refusal.refusals_for`)
goes out through the SDK's write stream, so it is serialised with every
other reply. Lines without a recoverable id pass through unchanged. On our own
wire (``wire.py``) the guard's parse is the only one: the server reads the
messages it parsed (:func:`_parsed_once`), not the lines.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
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
OWED_TIMEOUT: Final = 2.0
"""At end of input, how long requests already read may take to be answered before the SDK stops."""


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


class OwedReplies:
    """The ids of requests passed to the SDK and not yet answered.

    At end of input the SDK cancels its request tasks; one dispatched but not yet
    started is never answered at all (a ``ping`` read just before EOF, say). So the
    guard holds the SDK's end of input until what was read has been answered, or
    :data:`OWED_TIMEOUT` has passed and the SDK's own "Connection closed" takes over.
    """

    def __init__(self) -> None:
        self._owed: set[str | int] = set()
        self._settled = anyio.Event()
        self._settled.set()

    def read(self, message: types.JSONRPCMessage | Exception) -> None:
        """Note a message on its way to the SDK: a request is owed a reply, a cancel ends that."""
        if isinstance(message, types.JSONRPCRequest):
            self._owed.add(message.id)
            if self._settled.is_set():
                self._settled = anyio.Event()
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            self._discharge(message.params.get("requestId"))

    def written(self, message: object) -> None:
        """Note a message the SDK writes: a response or an error discharges its id."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._discharge(message.id)

    async def settled(self) -> None:
        """Return once every request read has been answered (or cancelled by its client)."""
        await self._settled.wait()

    def _discharge(self, request_id: object) -> None:
        if isinstance(request_id, str | int):
            self._owed.discard(request_id)
        if not self._owed:
            self._settled.set()


class _Answering:
    """The SDK's write stream, telling :class:`OwedReplies` what it carries."""

    def __init__(self, stream: Any, owed: OwedReplies) -> None:
        self._stream = stream
        self._owed = owed

    async def send(self, item: SessionMessage) -> None:
        await self._stream.send(item)
        self._owed.written(item.message)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Answering:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


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
        self.owed = OwedReplies()

    def __aiter__(self) -> RefusingLines:
        return self

    async def __anext__(self) -> str:
        line, _parsed = await self._next()
        return line

    async def messages(self) -> AsyncIterator[SessionMessage | Exception]:
        """What the SDK's stdio reader would hand the server, each line parsed here, once.

        A line that does not parse and carries no request id comes through as its
        exception, as the SDK's reader passes it on.
        """
        while True:
            try:
                _line, parsed = await self._next()
            except StopAsyncIteration:
                return
            yield parsed if isinstance(parsed, Exception) else SessionMessage(parsed)

    async def _next(self) -> tuple[str, types.JSONRPCMessage | Exception]:
        while True:
            try:
                line = await self._lines.__anext__()
            except StopAsyncIteration:
                # Hold the SDK's end of input until what is owed is written: at EOF the
                # server stops, answers every request still in flight with its generic
                # "Connection closed" and closes the write stream. A client that closed
                # only stdin still reads stdout, so in-flight calls end first, with
                # their own error (P-REL-7).
                self._send.close()  # no refusal comes after the last line
                if self._at_eof is not None:
                    await self._at_eof()
                with anyio.move_on_after(OWED_TIMEOUT):
                    await self.owed.settled()
                with anyio.move_on_after(DRAIN_TIMEOUT):
                    await self.drained.wait()
                raise
            parsed, refusals = _parsed(line)
            if not refusals:
                self.owed.read(parsed)
                return line, parsed
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


def _parsed(line: str) -> tuple[types.JSONRPCMessage | Exception, list[Refusal]]:
    """The line as the SDK's reader parses it, and the refusals owed when that fails."""
    try:
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False), []
    except Exception as exc:  # whatever the SDK's reader would refuse
        return exc, refusals_for(line)


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
        options: dict[str, Any] = {"stdin": guard}  # the SDK types stdin as an AsyncFile
        opened: AbstractAsyncContextManager[tuple[Any, Any]] = (
            _parsed_once(guard, stdout) if stdout is not None else stdio_server(**options)
        )
        async with opened as (read, write), anyio.create_task_group() as group:
            group.start_soon(guard.answer, write)
            try:
                yield read, _Answering(write, guard.owed)
            finally:
                group.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def _parsed_once(guard: RefusingLines, stdout: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server`` loop over our own wire, reading the guard's parsed messages.

    The guard must parse each line to answer what the SDK cannot; handing the
    SDK the line would parse it a second time (~6 µs in a loop, ~34 µs on a
    serving proxy). Replies are written as the SDK's writer writes them.
    """
    read_send, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with read_send:
                async for item in guard.messages():
                    await read_send.send(item)

    async def writer() -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with write_receive:
                async for message in write_receive:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdout.write(text + "\n")
                    await stdout.flush()

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        yield read, write


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
