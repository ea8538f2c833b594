"""Per-upstream protection: a circuit breaker and a bulkhead (in-flight limit + bounded queue).

Both fail *fast*: a caller refused by either never touches the upstream, so
a sick or saturated server cannot make the proxy's memory or latency grow
with offered load (P-REL-3, P-REL-4).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from cartograph.errors import CircuitOpen, Overloaded

BreakerState = Literal["closed", "open", "half-open"]


@dataclass
class CircuitBreaker:
    """Opens after ``failures`` consecutive failures; lets one probe through after ``cooldown``.

    ``clock`` is injectable so tests move time instead of sleeping.
    """

    server: str
    failures: int
    cooldown: float
    clock: Callable[[], float] = time.monotonic
    consecutive: int = 0
    opened_at: float | None = None
    probing: bool = False
    trips: int = 0

    @property
    def state(self) -> BreakerState:
        if self.opened_at is None:
            return "closed"
        if self.clock() - self.opened_at >= self.cooldown:
            return "half-open"
        return "open"

    def retry_after(self) -> float:
        if self.opened_at is None:
            return 0.0
        return max(0.0, self.cooldown - (self.clock() - self.opened_at))

    def before_call(self) -> None:
        """Raise :class:`CircuitOpen` unless a call may go upstream now."""
        state = self.state
        if state == "closed":
            return
        if state == "half-open" and not self.probing:
            self.probing = True
            return
        wait = self.retry_after() if state == "open" else self.cooldown
        raise CircuitOpen(
            f"upstream {self.server!r} failed {self.consecutive} times in a row; "
            f"calls are refused for {wait:.1f}s more "
            "(retry after that, or check `cartograph status`)",
            server=self.server,
            retry_after=round(wait, 3),
        )

    def record_success(self) -> None:
        self.consecutive = 0
        self.opened_at = None
        self.probing = False

    def abandon(self) -> None:
        """A call ended without a verdict (cancelled): free the probe slot, change nothing else."""
        self.probing = False

    def record_failure(self) -> None:
        self.consecutive += 1
        if self.probing or self.consecutive >= self.failures:
            if self.opened_at is None or self.probing:
                self.trips += 1
            self.opened_at = self.clock()
        self.probing = False

    def snapshot(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "consecutive_failures": self.consecutive,
            "retry_after": round(self.retry_after(), 3),
            "trips": self.trips,
        }


@dataclass
class Bulkhead:
    """At most ``max_in_flight`` calls run; at most ``queue_size`` more wait; the rest fail fast."""

    server: str
    max_in_flight: int
    queue_size: int
    in_flight: int = 0
    waiting: int = 0
    rejected: int = 0
    _slots: anyio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        # fast_acquire: a free slot is taken without a scheduling round trip (the
        # admission count above, not the semaphore, is what bounds the queue).
        self._slots = anyio.Semaphore(self.max_in_flight, fast_acquire=True)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one in-flight slot for the body; queue (bounded) or raise :class:`Overloaded`."""
        # Count admitted callers (running or waiting), not free slots, so a burst of
        # arrivals is judged against the same total however the scheduler interleaves.
        if self.in_flight + self.waiting >= self.max_in_flight + self.queue_size:
            self.rejected += 1
            raise Overloaded(
                f"upstream {self.server!r} is at its limit of {self.max_in_flight} calls in flight "
                f"with {self.waiting} queued; retry shortly or raise gateway.max_in_flight",
                server=self.server,
                in_flight=self.in_flight,
                queued=self.waiting,
            )
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self._slots.release()

    def snapshot(self) -> dict[str, Any]:
        return {
            "in_flight": self.in_flight,
            "queued": self.waiting,
            "max_in_flight": self.max_in_flight,
            "queue_size": self.queue_size,
            "rejected": self.rejected,
        }
