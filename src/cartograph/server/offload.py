"""CPU-bound work off the event loop, under one bound per process (P-REL-10).

The proxy serves every client from one event loop: a ``discover`` that ranks
on it stops every other client's ``status`` and ``call`` until it is done (an
adversarial 3.9 MB task froze all of them for 11 s). Query embedding, ranking
and index builds therefore run in worker threads. Threads, not processes:
onnxruntime and numpy release the GIL for the heavy parts, and a 4,000-character
discover on the shipped MiniLM delays the loop by at most ~5-20 ms while it runs in
a thread (``docs/gateway.md``), without pickling the index into another process.

All runtimes of one process (one per catalog under ``serve --http``) share
one :class:`anyio.CapacityLimiter`, so the number of concurrent CPU jobs is
bounded however many catalogs and clients there are; jobs beyond the bound
wait their turn without holding the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
from anyio.lowlevel import RunVar

from cartograph.config.model import DEFAULT_CPU_WORKERS

T = TypeVar("T")

_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("cartograph_cpu_limiter")


def cpu_limiter(workers: int = DEFAULT_CPU_WORKERS) -> anyio.CapacityLimiter:
    """This event loop's CPU limiter; ``workers`` sets its size on first use.

    Per event loop (a ``RunVar``), because a limiter belongs to the loop that
    made it; a later call with another size resizes it, so the last config
    loaded wins (one process serves one config).
    """
    try:
        limiter = _LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(workers)
        _LIMITER.set(limiter)
        return limiter
    if limiter.total_tokens != workers:
        limiter.total_tokens = workers
    return limiter


async def run_cpu(func: Callable[[], T], *, workers: int = DEFAULT_CPU_WORKERS) -> T:
    """Run ``func`` in a worker thread once one of ``workers`` CPU slots is free.

    A cancelled caller still waits for a started ``func`` to return (threads
    cannot be interrupted), which the task-length limit keeps short.
    """
    return await anyio.to_thread.run_sync(func, limiter=cpu_limiter(workers))
