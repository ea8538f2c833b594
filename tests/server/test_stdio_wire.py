"""The thread-free stdio wire: line framing and the fd diversion it shares with the SDK."""

from __future__ import annotations

import asyncio
import os

import pytest

from cartograph.server.stdio import wire as stdio_wire
from cartograph.server.stdio.wire import LineReader, fast_stdio


@pytest.mark.anyio
async def test_lines_are_split_across_chunks_and_a_final_unterminated_line_is_kept() -> None:
    reader = asyncio.StreamReader()
    big = "x" * 300_000  # larger than one read chunk
    for piece in ('{"a":1}\n{"b":', "2}\n", big, "\n", "tail"):
        reader.feed_data(piece.encode())
    reader.feed_eof()

    lines = [line async for line in LineReader(reader)]

    assert lines == ['{"a":1}\n', '{"b":2}\n', big + "\n", "tail"]


@pytest.mark.anyio
async def test_only_a_newline_ends_a_line_and_a_character_split_across_reads_survives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stdio_wire, "READ_CHUNK", 4)  # reads end inside multi-byte characters
    reader = asyncio.StreamReader()
    line = '{"id":"a\x85b\u2028c\u2029d\x0be\x1cf\r"}\n'  # str.splitlines would cut it 6 times
    reader.feed_data((line + line).encode())
    reader.feed_eof()
    assert [read async for read in LineReader(reader)] == [line, line]


@pytest.mark.anyio
async def test_undecodable_bytes_are_replaced_not_fatal() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(b'{"t":"\xff"}\n')
    reader.feed_eof()
    assert [line async for line in LineReader(reader)] == ['{"t":"\ufffd"}\n']


@pytest.mark.anyio
async def test_fd_1_points_away_from_the_wire_while_serving_and_is_restored(
    capfd: pytest.CaptureFixture[str],
) -> None:
    read_end, write_end = os.pipe()
    out_read, out_write = os.pipe()
    saved = (os.dup(0), os.dup(1))
    os.dup2(read_end, 0)
    os.dup2(out_write, 1)
    try:
        async with fast_stdio() as wire:
            assert wire is not None
            stdin, stdout = wire
            os.write(1, b"stray\n")  # must not reach the wire
            await stdout.write('{"jsonrpc":"2.0"}\n')
            await stdout.flush()
            os.write(write_end, b"hello\n")
            os.close(write_end)
            assert [line async for line in stdin] == ["hello\n"]
        assert os.read(out_read, 1000) == b'{"jsonrpc":"2.0"}\n'
    finally:
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        for fd in (*saved, read_end, out_read, out_write):
            os.close(fd)
    assert "stray" in capfd.readouterr().err
