"""stdin/stdout for the stdio proxy without a thread hop per message.

The SDK's ``stdio_server()`` reads each line in a worker thread and writes
and flushes each reply in two more; on a busy machine those three handoffs
(plus the GIL traffic they cause) cost more than everything else a pooled
``call`` does. When stdin and stdout are pipes, sockets or terminals we read
and write them from the event loop instead and hand the SDK these streams
through its public ``stdio_server(stdin=..., stdout=...)`` parameters; for
anything else (a regular file redirected in) the SDK's own path is used.

Like the SDK, while serving fd 0 reads the null device and fd 1 points at
stderr, so a stray ``print`` or a child's output can never corrupt the
JSON-RPC stream (P-STDIO-1); both are restored on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

READ_CHUNK: Final = 256 * 1024
MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""A single JSON-RPC message larger than this is refused rather than buffered forever."""


class LineReader:
    """Async-iterates decoded lines (newline kept, as a text file would) from a pipe."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._buffer = bytearray()

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line.decode("utf-8", errors="replace")
            if len(self._buffer) > MAX_LINE_BYTES:
                raise ValueError(f"a stdin message exceeded {MAX_LINE_BYTES} bytes")
            chunk = await self._reader.read(READ_CHUNK)
            if not chunk:
                if self._buffer:
                    rest = bytes(self._buffer)
                    self._buffer.clear()
                    return rest.decode("utf-8", errors="replace")
                raise StopAsyncIteration
            self._buffer += chunk


class LineWriter:
    """``write`` queues text on the pipe transport; ``flush`` waits until the kernel takes it."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _streamable(fd: int) -> bool:
    """asyncio pipe transports accept only pipes, sockets and character devices."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@asynccontextmanager
async def fast_stdio() -> AsyncIterator[tuple[Any, Any] | None]:
    """Yield ``(stdin, stdout)`` stream objects for ``stdio_server``, or ``None`` to use the SDK's.

    Only when both descriptors are pipe-like; the wire is served from private
    duplicates while fd 0/1 are diverted, and everything is put back after.
    """
    if sys.platform == "win32" or not (_streamable(0) and _streamable(1)):
        yield None
        return
    loop = asyncio.get_running_loop()
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    blocking = (os.get_blocking(wire_in), os.get_blocking(wire_out))
    saved = _divert()
    transports: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(wire_in, "rb", buffering=0, closefd=False),
        )
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop),
            os.fdopen(wire_out, "wb", buffering=0, closefd=False),
        )
        transports.append(write_transport)
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        yield LineReader(reader), LineWriter(writer)
    finally:
        for transport in transports:
            transport.close()
        _restore(saved)
        for fd, was_blocking in zip((wire_in, wire_out), blocking, strict=True):
            with contextlib.suppress(OSError):
                os.set_blocking(fd, was_blocking)  # a shared terminal must not stay non-blocking
                os.close(fd)


def _divert() -> tuple[int, int]:
    """Point fd 0 at the null device and fd 1 at stderr; return copies to restore from."""
    saved = (os.dup(0), os.dup(1))
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    sys.stdout.flush()
    os.dup2(2, 1)
    return saved


def _restore(saved: tuple[int, int]) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    for fd, copy in zip((0, 1), saved, strict=True):
        with contextlib.suppress(OSError):
            os.dup2(copy, fd)
            os.close(copy)
