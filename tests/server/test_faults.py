"""Fault injection against real subprocess upstreams: the proxy keeps serving."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import anyio
import pytest

from cartograph.gateway.audit import MEMORY_RECORDS
from tests.helpers.support import scriptable
from tests.server.support import call, code, running, text, wait_until


@pytest.mark.anyio
@pytest.mark.promise("P-REL-1")
async def test_hung_upstream_times_out_within_deadline_while_a_healthy_one_answers(
    tmp_path: Path,
) -> None:
    deadline = 1.5
    async with running(tmp_path, scriptable("slow", call_timeout=deadline), scriptable("ok")) as h:
        healthy: list[str] = []

        async def healthy_calls() -> None:
            for _ in range(3):
                healthy.append(text(await call(h, "ok", "add", a=1, b=1)))

        with anyio.fail_after(deadline + 30):  # a hang guard, not a speed target
            async with anyio.create_task_group() as group:
                group.start_soon(healthy_calls)
                hung = await call(h, "slow", "hang")
        assert code(hung) == "upstream_timeout"
        assert healthy == ["2", "2", "2"]
        assert h.runtime.gateway.in_flight() == 0
        assert text(await call(h, "slow", "add", a=2, b=2)) == "4"


@pytest.mark.anyio
@pytest.mark.promise("P-REL-2")
async def test_crash_mid_call_fails_that_call_only_and_the_next_call_restarts(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("fragile"), scriptable("other")) as h:
        pid_before = text(await call(h, "fragile", "pid"))
        crashed = await call(h, "fragile", "crash")
        assert code(crashed) == "upstream_closed"
        assert text(await call(h, "other", "add", a=1, b=2)) == "3"
        recovered = await call(h, "fragile", "pid")
        assert not recovered.is_error
        assert text(recovered) != pid_before
        servers = {s["name"]: s for s in h.runtime.status()["servers"]}
        assert servers["fragile"]["restarts"] == 1
        assert servers["other"]["restarts"] == 0


@pytest.mark.anyio
@pytest.mark.promise("P-REL-6")
async def test_malformed_replies_fail_only_the_affected_call(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("odd", call_timeout=1.0)) as h:
        bad_shape = await call(h, "odd", "malformed", mode="bad_result")
        assert code(bad_shape) == "upstream_protocol"
        garbage = await call(h, "odd", "malformed", mode="garbage")
        assert code(garbage) == "upstream_timeout"
        assert text(await call(h, "odd", "add", a=3, b=4)) == "7"


@pytest.mark.anyio
@pytest.mark.promise("P-REL-5")
async def test_oversized_upstream_result_is_truncated_with_a_marker(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("chatty"), max_result_bytes=4096) as h:
        result = await call(h, "chatty", "big", size=200_000)
        assert not result.is_error
        assert "truncated" in text(result)
        assert len(text(result)) < 8192


@pytest.mark.anyio
async def test_notification_flood_does_not_stop_the_proxy_serving(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("noisy"), scriptable("ok")) as h:
        assert text(await call(h, "noisy", "flood", n=300)) == "flooded"
        assert text(await call(h, "ok", "add", a=1, b=1)) == "2"
        assert text(await call(h, "noisy", "add", a=1, b=1)) == "2"


@pytest.mark.anyio
async def test_slow_starting_upstream_is_waited_for_and_then_served(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("sleepy", "--start-delay", "1.5")) as h:
        assert text(await call(h, "sleepy", "add", a=5, b=5)) == "10"


@pytest.mark.anyio
async def test_upstream_slower_than_its_connect_timeout_is_reported_not_fatal(
    tmp_path: Path,
) -> None:
    late = scriptable("late", "--start-delay", "30", connect_timeout=1.0)
    async with running(tmp_path, late, scriptable("ok")) as h:
        assert text(await call(h, "ok", "add", a=1, b=1)) == "2"
        servers = {s["name"]: s for s in h.runtime.status()["servers"]}
        assert servers["late"]["health"] == "down"
        assert servers["ok"]["health"] == "up"


@pytest.mark.anyio
@pytest.mark.promise("P-REL-3")
async def test_repeated_upstream_failures_open_the_circuit_and_skip_upstream_io(
    tmp_path: Path,
) -> None:
    server = scriptable("flaky", call_timeout=0.5)
    async with running(tmp_path, server, breaker_failures=2, breaker_cooldown=60.0) as h:
        for _ in range(2):
            assert code(await call(h, "flaky", "hang")) == "upstream_timeout"
        refused = await call(h, "flaky", "add", a=1, b=1)
        assert code(refused) == "circuit_open"
        assert refused.structured_content["error"]["retry_after"] > 0
        assert h.runtime.gateway.guard("flaky").calls == 2


@pytest.mark.anyio
@pytest.mark.promise("P-REL-3")
async def test_after_the_cooldown_one_probe_reaches_the_upstream_and_closes_the_circuit(
    tmp_path: Path,
) -> None:
    server = scriptable("flaky", call_timeout=0.5)
    async with running(tmp_path, server, breaker_failures=2, breaker_cooldown=60.0) as h:
        guard = h.runtime.gateway.guard("flaky")
        for _ in range(2):
            assert code(await call(h, "flaky", "hang")) == "upstream_timeout"
        assert code(await call(h, "flaky", "add", a=1, b=1)) == "circuit_open"
        opened = guard.breaker.clock()
        guard.breaker.clock = lambda: opened + 60.0  # the cooldown has passed; no sleeping

        assert text(await call(h, "flaky", "add", a=2, b=3)) == "5"  # the probe went upstream

        assert guard.calls == 3
        assert guard.breaker.state == "closed"
        assert text(await call(h, "flaky", "add", a=1, b=1)) == "2"


@pytest.mark.anyio
@pytest.mark.promise("P-REL-4")
async def test_overload_beyond_in_flight_and_queue_fails_fast(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("busy"), max_in_flight=1, queue_size=0) as h:
        results: list[str | None] = []

        async def slow() -> None:
            results.append(code(await call(h, "busy", "sleep", seconds=1.0)))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await wait_until(lambda: h.runtime.gateway.guard("busy").bulkhead.in_flight > 0)
                overloaded = await call(h, "busy", "add", a=1, b=1)
        assert code(overloaded) == "overloaded"
        assert results == [None]


@pytest.mark.anyio
@pytest.mark.promise("P-REL-4")
async def test_memory_held_by_the_proxy_does_not_grow_with_offered_load(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("busy"), max_in_flight=1, queue_size=1) as h:
        bulkhead = h.runtime.gateway.guard("busy").bulkhead

        async def hold() -> None:
            with anyio.move_on_after(30):
                await call(h, "busy", "sleep", seconds=20.0)

        async def offer(n: int) -> None:
            for _ in range(n):
                assert code(await call(h, "busy", "add", a=1, b=1)) == "overloaded"

        async def retained_after(n: int) -> int:
            await offer(n)
            gc.collect()
            return tracemalloc.get_traced_memory()[0]

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(hold)
                group.start_soon(hold)  # one running, one queued: the bound is full
                await wait_until(lambda: bulkhead.in_flight + bulkhead.waiting == 2)
                await offer(50)  # warm every cache a refused call touches
                tracemalloc.start()
                try:
                    base = await retained_after(0)
                    # Enough to replace the whole in-memory audit ring with traced records.
                    after_small = await retained_after(MEMORY_RECORDS + 200)
                    after_large = await retained_after(2000)
                finally:
                    tracemalloc.stop()
                assert (bulkhead.in_flight, bulkhead.waiting) == (1, 1)
                group.cancel_scope.cancel()
        # 2,000 more refused calls retain nothing more: no state grows per call offered.
        assert after_large - after_small < 64 * 1024, (base, after_small, after_large)
