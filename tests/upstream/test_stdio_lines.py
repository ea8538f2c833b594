"""The SDK's stdio client reads through line-aligned chunks (a large reply costs linear time)."""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import ByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream

from cartograph.upstream._stdio_lines import LineAlignedTextReceiveStream

pytestmark = pytest.mark.anyio


async def _chunks(pieces: list[bytes]) -> list[str]:
    send, receive = anyio.create_memory_object_stream[bytes](len(pieces))
    for piece in pieces:
        send.send_nowait(piece)
    send.close()
    with receive:
        stream = LineAlignedTextReceiveStream(_ByteStream(receive))
        return [chunk async for chunk in stream]


class _ByteStream(ByteReceiveStream):
    """A byte receive stream over a memory object stream (what a pipe hands the reader)."""

    def __init__(self, inner: MemoryObjectReceiveStream[bytes]) -> None:
        self.inner = inner

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self.inner.receive()

    async def aclose(self) -> None:
        self.inner.close()


async def test_every_chunk_ends_at_a_newline_so_the_readers_buffer_stays_empty() -> None:
    pieces = [b'{"a":', b'1}\n{"b"', b":2}\n", b'{"c":3}\n{"d"', b":4}"]
    assert await _chunks(pieces) == ['{"a":1}\n', '{"b":2}\n', '{"c":3}\n', '{"d":4}']


async def test_a_character_split_across_reads_stays_whole() -> None:
    snowman = "☃".encode()
    pieces = [b'{"t":"' + snowman[:1], snowman[1:] + b'"}\n']
    assert await _chunks(pieces) == ['{"t":"☃"}\n']


async def test_a_megabyte_line_in_many_small_reads_is_one_chunk() -> None:
    line = b"x" * 1_000_000 + b"\n"
    pieces = [line[i : i + 4096] for i in range(0, len(line), 4096)]
    assert await _chunks(pieces) == [line.decode()]


def test_the_sdk_stdio_client_reads_through_it() -> None:
    import mcp.client.stdio

    import cartograph.upstream.transports  # noqa: F401 - installs on import

    assert mcp.client.stdio.TextReceiveStream is LineAlignedTextReceiveStream  # type: ignore[attr-defined]
