"""Circuit breaker and bulkhead, with an injected clock and events instead of sleeps."""

from __future__ import annotations

import anyio
import pytest

from cartograph.errors import CircuitOpen, Overloaded
from cartograph.gateway.limits import Bulkhead, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.promise("P-REL-3")
def test_breaker_opens_after_n_failures_and_fails_fast_with_retry_after() -> None:
    clock = Clock()
    breaker = CircuitBreaker("s", failures=3, cooldown=10.0, clock=clock)
    for _ in range(3):
        breaker.before_call()
        breaker.record_failure()
    clock.now += 4.0
    with pytest.raises(CircuitOpen) as caught:
        breaker.before_call()
    assert caught.value.code == "circuit_open"
    assert caught.value.details["retry_after"] == pytest.approx(6.0)


@pytest.mark.promise("P-REL-3")
def test_breaker_lets_exactly_one_probe_through_after_cooldown() -> None:
    clock = Clock()
    breaker = CircuitBreaker("s", failures=1, cooldown=5.0, clock=clock)
    breaker.record_failure()
    clock.now += 5.0
    breaker.before_call()  # the probe
    with pytest.raises(CircuitOpen) as raised:
        breaker.before_call()  # a second caller while the probe runs
    assert raised.value.code == "circuit_open"
    breaker.record_success()
    assert breaker.state == "closed"
    breaker.before_call()


def test_failed_probe_reopens_the_breaker_for_a_full_cooldown() -> None:
    clock = Clock()
    breaker = CircuitBreaker("s", failures=1, cooldown=5.0, clock=clock)
    breaker.record_failure()
    clock.now += 5.0
    breaker.before_call()
    breaker.record_failure()
    assert breaker.state == "open"
    assert breaker.retry_after() == pytest.approx(5.0)
    assert breaker.trips == 2


@pytest.mark.anyio
@pytest.mark.promise("P-REL-4")
async def test_bulkhead_queues_up_to_its_bound_then_rejects_at_once() -> None:
    bulkhead = Bulkhead("s", max_in_flight=1, queue_size=1)
    release = anyio.Event()
    entered = anyio.Event()
    queued_done = anyio.Event()

    async def holder() -> None:
        async with bulkhead.slot():
            entered.set()
            await release.wait()

    async def queued() -> None:
        async with bulkhead.slot():
            queued_done.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            await entered.wait()
            group.start_soon(queued)
            while bulkhead.waiting < 1:
                await anyio.lowlevel.checkpoint()
            with pytest.raises(Overloaded) as caught:
                async with bulkhead.slot():
                    pass
            assert caught.value.code == "overloaded"
            release.set()
        assert queued_done.is_set()
    assert bulkhead.rejected == 1
    assert (bulkhead.in_flight, bulkhead.waiting) == (0, 0)


@pytest.mark.anyio
@pytest.mark.promise("P-REL-4")
async def test_offered_load_beyond_the_bound_never_grows_the_queue() -> None:
    bulkhead = Bulkhead("s", max_in_flight=2, queue_size=3)
    release = anyio.Event()
    rejected = 0

    async def caller() -> None:
        nonlocal rejected
        try:
            async with bulkhead.slot():
                await release.wait()
        except Overloaded:
            rejected += 1

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for _ in range(100):
                group.start_soon(caller)
            while bulkhead.in_flight + bulkhead.waiting + rejected < 100 and rejected < 95:
                await anyio.lowlevel.checkpoint()
            assert bulkhead.in_flight + bulkhead.waiting <= 5
            release.set()
    assert rejected == 95


def test_an_abandoned_half_open_probe_frees_the_probe_slot() -> None:
    now = [0.0]
    breaker = CircuitBreaker("s", failures=1, cooldown=10.0, clock=lambda: now[0])
    breaker.record_failure()
    now[0] = 11.0
    breaker.before_call()  # the probe
    breaker.abandon()  # ...was cancelled: no verdict
    breaker.before_call()  # another probe may go
    assert breaker.state == "half-open"
