"""The coalescing re-list behind ``tools/list_changed`` and ``resources``/``prompts/list_changed``.

Runs are coordinated with events: a gated run blocks until released, so
"during a running re-list" is a fact, not a timing guess. ``fail_after`` only
turns a hang into a failure; it bounds no speed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

from cartograph.errors import UpstreamUnavailable
from cartograph.server.refresher import CoalescingRefresher

pytestmark = pytest.mark.anyio

HANG: float = 30.0


class Job:
    """A refresh that counts its runs; each run numbered in ``gated`` waits to be released."""

    def __init__(self, *gated: int, fail_on: int | None = None) -> None:
        self.runs = 0
        self.fail_on = fail_on
        self.started = {n: anyio.Event() for n in gated}
        self.release = {n: anyio.Event() for n in gated}

    async def __call__(self) -> None:
        self.runs += 1
        run = self.runs
        if run in self.started:
            self.started[run].set()
            await self.release[run].wait()
        if run == self.fail_on:
            raise UpstreamUnavailable("gone", server="s")


@contextmanager
def bounded() -> Iterator[None]:
    with anyio.fail_after(HANG):
        yield


async def test_many_triggers_during_a_running_refresh_cause_exactly_one_more_run() -> None:
    refresher, job = CoalescingRefresher(), Job(1)
    with bounded():
        async with anyio.create_task_group() as group:
            group.start_soon(refresher.trigger, "s", job)
            await job.started[1].wait()
            for _ in range(10):
                await refresher.trigger("s", job)  # returns at once: it only queues
            assert job.runs == 1
            job.release[1].set()
    assert job.runs == 2


async def test_a_trigger_with_nothing_in_flight_runs_once_and_returns_after_it() -> None:
    refresher, job = CoalescingRefresher(), Job()
    await refresher.trigger("s", job)
    assert job.runs == 1
    await refresher.trigger("s", job)
    assert job.runs == 2


async def test_a_trigger_during_the_queued_run_queues_one_more() -> None:
    refresher, job = CoalescingRefresher(), Job(1, 2)
    with bounded():
        async with anyio.create_task_group() as group:
            group.start_soon(refresher.trigger, "s", job)
            await job.started[1].wait()
            await refresher.trigger("s", job)
            job.release[1].set()
            await job.started[2].wait()  # the queued run is now the one in flight
            await refresher.trigger("s", job)
            await refresher.trigger("s", job)
            job.release[2].set()
    assert job.runs == 3


async def test_the_rerun_repeats_the_starter_s_refresh_not_a_later_trigger_s() -> None:
    refresher, starter, late = CoalescingRefresher(), Job(1), Job()
    with bounded():
        async with anyio.create_task_group() as group:
            group.start_soon(refresher.trigger, "s", starter)
            await starter.started[1].wait()
            await refresher.trigger("s", late)
            starter.release[1].set()
    assert (starter.runs, late.runs) == (2, 0)


async def test_keys_coalesce_independently() -> None:
    refresher, a, b = CoalescingRefresher(), Job(1), Job()
    with bounded():
        async with anyio.create_task_group() as group:
            group.start_soon(refresher.trigger, "a", a)
            await a.started[1].wait()
            await refresher.trigger("b", b)  # not queued behind "a": it runs now
            assert b.runs == 1
            a.release[1].set()
    assert a.runs == 1


async def test_a_failing_refresh_drops_the_queued_run_and_raises_to_the_starter() -> None:
    refresher, job = CoalescingRefresher(), Job(1, fail_on=1)
    caught: list[UpstreamUnavailable] = []

    async def starter() -> None:
        try:
            await refresher.trigger("s", job)
        except UpstreamUnavailable as exc:
            caught.append(exc)

    with bounded():
        async with anyio.create_task_group() as group:
            group.start_soon(starter)
            await job.started[1].wait()
            await refresher.trigger("s", job)  # queued, then dropped by the failure
            job.release[1].set()
    assert job.runs == 1
    assert [e.code for e in caught] == ["upstream_unavailable"]
    await refresher.trigger("s", job)  # the key is free again: a fresh run starts
    assert job.runs == 2
