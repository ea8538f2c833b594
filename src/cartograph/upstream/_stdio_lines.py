"""Line-aligned reads for the SDK's stdio client: a large reply costs linear time.

mcp 2.3.0's stdio reader splits each decoded chunk with
``(buffer + chunk).split("\\n")``. A reply of n bytes arrives in n / 64 KiB
chunks and every one re-copies and re-scans the whole partial line, so a
20 MB reply cost 3-7 s of event-loop CPU (5 MB: 0.4 s) — time every other
client waits in 50 ms slices, and what a timed-out call's session keeps
burning. :class:`LineAlignedTextReceiveStream` hands the reader only chunks
that end at a newline, so its buffer is always empty and the split is linear.

:func:`install` replaces the name the SDK's stdio module reads; ``mcp`` is
pinned exactly in ``pyproject.toml`` and a test pins that the replacement is
the one in use.
"""

from __future__ import annotations

from anyio import EndOfStream
from anyio.streams.text import TextReceiveStream


class LineAlignedTextReceiveStream(TextReceiveStream):
    """A :class:`TextReceiveStream` whose chunks end with ``\\n`` (but a last, unterminated one)."""

    _pending: list[str]

    def __post_init__(self, encoding: str, errors: str) -> None:
        super().__post_init__(encoding, errors)
        self._pending = []

    async def receive(self) -> str:
        while True:
            try:
                piece = await super().receive()
            except EndOfStream:
                if not self._pending:
                    raise
                tail, self._pending = "".join(self._pending), []
                return tail
            cut = piece.rfind("\n") + 1
            if not cut:
                self._pending.append(piece)  # joined once, when the line ends: linear
                continue
            self._pending.append(piece[:cut])
            whole, self._pending = "".join(self._pending), [piece[cut:]] if cut < len(piece) else []
            return whole


def install() -> None:
    """Make the SDK's stdio client read through :class:`LineAlignedTextReceiveStream`."""
    import mcp.client.stdio

    # The SDK imports the name without re-exporting it; assigning it is the point.
    mcp.client.stdio.TextReceiveStream = LineAlignedTextReceiveStream  # type: ignore[attr-defined]


__all__ = ["LineAlignedTextReceiveStream", "install"]
