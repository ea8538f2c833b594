"""Three replicas behind HAProxy, one PostgreSQL: a replica killed, the database restarted.

Everything is real and on 127.0.0.1: Debian's PostgreSQL and HAProxy (installed
by ``scripts/setup.d/60-fleet.sh``, started here), ``cartograph serve --http``
replicas as subprocesses with operator-signed cards, SDK streamable-HTTP
clients. The CI form is small (10 clients x 20 calls); the full 50 x 100 load
and the throughput figures are ``benchmarks/fleet_load.py``.

What must hold: only requests in flight on the killed replica fail, and a
retry of each succeeds; every call that returned a result has exactly one
audit record in PostgreSQL (matched by the call's own ``traceparent``), across
the kill and across a database restart.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.helpers.fleet import Fleet, prepare, running
from tests.helpers.fleet_load import Load, call_once, drive
from tests.helpers.postgres import Postgres, pg_bin, postgres_server

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

CLIENTS, CALLS = 10, 20
STALL = 3.0
"""Seconds every replica is stopped (SIGSTOP) in the stateless test: longer than the 500 ms
check interval x ``fall 2`` (plus the check's own wait) in which a balancer that gives
a health check no more than its interval marks every replica down."""


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    if pg_bin() is None and os.environ.get("CI") != "true":
        pytest.skip("PostgreSQL is not installed here (scripts/setup.d/60-fleet.sh installs it)")
    with postgres_server() as server:
        yield server


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cartograph-fleet-") as name:
        yield Path(name)


def check_audit(fleet: Fleet, load: Load) -> dict[str, int]:
    """Every answered call: exactly one record; a failed attempt: at most one."""
    per_trace = Counter(trace for trace, _, _ in fleet.audit_rows())
    answered = [a.trace for a in load.answered]
    assert len(set(answered)) == len(answered) == CLIENTS * CALLS
    missing = [t for t in answered if per_trace[t] == 0]
    doubled = [t for t, n in per_trace.items() if n > 1]
    assert (missing, doubled) == ([], [])
    return {"answered": len(answered), "records": sum(per_trace.values())}


async def test_killing_a_stateless_replica_fails_only_its_in_flight_calls_and_loses_no_audit(
    postgres: Postgres, folder: Path
) -> None:
    """A stall of every replica, then a replica kill, then a database restart, under load.

    The stall (every replica stopped for ``STALL`` s, what a saturated machine
    does to their answers, health checks included) must fail nothing: a
    balancer that timed a check out after the 500 ms interval marked every
    replica down and answered the waiting clients 503, which the SDK reports
    as a bare ``MCPError`` ("Server returned an error response") — the
    unexplained errors of the full-load benchmark. The checks now wait
    ``timeout check``; a dead replica (connection refused) still leaves the
    rotation within about a second.
    """
    fleet = prepare(folder, postgres, "stateless", "fleet_stateless")
    total = CLIENTS * CALLS
    with running(fleet, 3):
        events: dict[str, float] = {}

        async def faults(answered: int) -> None:
            if answered >= total // 4 and "stall" not in events:
                events["stall"] = time.monotonic()
                for replica in fleet.replicas:
                    replica.process.send_signal(signal.SIGSTOP)
                try:
                    await anyio.sleep(STALL)  # the fault's length, not a wait for a result
                finally:
                    for replica in fleet.replicas:
                        replica.process.send_signal(signal.SIGCONT)
            elif answered >= total // 2 and "kill" not in events:
                events["kill"] = time.monotonic()
                fleet.kill(1)
            elif answered >= 3 * total // 4 and "restart" not in events:
                events["restart"] = time.monotonic()  # the database goes away and comes back
                await anyio.to_thread.run_sync(postgres.stop)
                await anyio.to_thread.run_sync(postgres.start)

        load = await drive(fleet.url, CLIENTS, CALLS, mode="stateless", on_progress=faults)
        down = [line for line in fleet.balancer_log() if " is DOWN" in line]
        fleet.terminate()  # no replica left: the balancer's own error, coded, with advice
        alone = await call_once(fleet.url)
    assert (alone.ok, alone.kind, alone.code) == (False, "MCPError", "no_replica"), alone
    assert "retry in a few seconds" in alone.error
    assert all(r.process.poll() is not None for r in fleet.replicas)  # none left running
    assert list(events) == ["stall", "kill", "restart"]
    # Nothing failed before the kill (the stall included) and no live replica left the rotation.
    failed = load.failed
    assert [a.cause for a in failed if load.started + a.at < events["kill"]] == []
    assert [line for line in down if "cartograph/r1 " not in line] == []
    # Only the killed replica's in-flight calls may fail: at most one per client, each retried.
    assert len(failed) <= CLIENTS, load.causes()
    assert all(a.trace for a in failed), load.causes()  # calls, not clients
    assert len(load.answered) == total
    check_audit(fleet, load)


async def test_killing_a_sticky_replica_ends_only_its_own_sessions(
    postgres: Postgres, folder: Path
) -> None:
    fleet = prepare(folder, postgres, "sticky", "fleet_sticky")
    total = CLIENTS * CALLS
    with running(fleet, 3):
        killed = fleet.pids()[1]
        done: list[int] = []

        async def kill(answered: int) -> None:
            if answered >= total // 3 and not done:
                done.append(answered)
                fleet.kill(1)

        load = await drive(fleet.url, CLIENTS, CALLS, mode="sticky", on_progress=kill)
    assert len(load.answered) == total
    check_audit(fleet, load)
    # Which replica holds a session is what the balancer logged for the response that
    # created it, not where the client's first answered call ran: under load a session
    # placed on the killed replica may not have answered anything before the kill.
    placed = fleet.session_replicas()
    sessions = {a.session for a in load.attempts if a.session}
    assert sessions <= placed.keys(), sessions - placed.keys()
    on_killed = {s for s in sessions if placed[s] == "r1"}
    assert on_killed  # round robin placed some sessions there
    ran_on = {trace: replica for trace, replica, _ in fleet.audit_rows()}
    for a in load.answered:  # the log and the audit records agree on where sessions ran
        assert ran_on[a.trace].endswith(f":{killed}") == (a.session in on_killed), a
    owners = {a.client for a in load.attempts if a.session in on_killed}
    detail = [(a.client, a.phase, a.session[:8], a.cause) for a in load.failed]
    # Every failure is in a session the killed replica held, or opens a new one for a
    # client that had such a session; no other client saw an error.
    assert all(a.session in on_killed or a.client in owners for a in load.failed), detail
    assert {a.client for a in load.failed} <= owners, detail
