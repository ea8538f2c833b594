"""Cross-process events for tests: wait on the kernel, never on a clock loop.

A test that must know "the call is now in flight upstream" or "that process
has exited" waits here on a file descriptor the kernel makes readable at that
instant — a FIFO the scriptable upstream's ``announce`` tool writes its pid
into, or a pidfd — so no test sleeps and then hopes. Every wait is bounded by a
generous limit that only a hung run reaches.
"""

from __future__ import annotations

import os
import select
from pathlib import Path
from types import TracebackType

import anyio

LIMIT = 30.0
"""Seconds before a wait gives up: a failure bound, never a speed target."""


class InFlight:
    """A FIFO to pass as ``announce``'s ``path``: :meth:`wait` returns once the call is upstream.

    The read end is opened non-blocking at once, so the upstream's open for
    writing never blocks; Linux reports the FIFO readable only when data arrives.
    """

    def __init__(self, folder: Path, name: str = "in-flight") -> None:
        self.path = folder / name
        os.mkfifo(self.path)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)

    def wait(self, limit: float = LIMIT) -> int:
        """The announcing upstream's pid, once it has written it."""
        ready, _, _ = select.select([self._fd], [], [], limit)
        if not ready:
            raise TimeoutError(f"no call announced itself on {self.path} within {limit} s")
        return int(os.read(self._fd, 64).decode("ascii"))

    async def wait_async(self, limit: float = LIMIT) -> int:
        return await anyio.to_thread.run_sync(self.wait, limit)

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> InFlight:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pid: int, limit: float = LIMIT) -> bool:
    """True once process ``pid`` has exited (any process, not only a child), False at ``limit``.

    A pidfd becomes readable when the process terminates.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], limit)
        return bool(ready)
    finally:
        os.close(fd)


async def wait_gone_async(pid: int, limit: float = LIMIT) -> bool:
    return await anyio.to_thread.run_sync(wait_gone, pid, limit)
