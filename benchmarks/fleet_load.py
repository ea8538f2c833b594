"""The fleet under load: throughput of 1 vs N replicas, then a replica kill and a database restart.

Everything on 127.0.0.1 and real (``tests/helpers/fleet.py``, its load driver
``tests/helpers/fleet_load.py``): Debian's PostgreSQL (a throwaway cluster)
holding the audit trail and the usage log, ``cartograph serve --http``
replicas with operator-signed cards, Debian's HAProxy in front, the SDK's
streamable-HTTP clients, each call a ``call`` of the scriptable upstream's
``echo`` tagged with its own ``traceparent``.

1. **Throughput**: the same load against 1 and against N replicas
   (``--mode``, stateless by default), calls answered per second, latency
   percentiles.
2. **Faults**: N replicas under the same load (same ``--mode``); one replica is SIGKILLed a
   third of the way in, PostgreSQL is stopped and restarted two thirds in.
   Reported: errors the clients saw (each retried), and the audit check —
   every answered call has exactly one record in PostgreSQL.

Every failed attempt is grouped by its cause: phase (initialize, list, call),
exception type, JSON-RPC code, Cartograph's (or the balancer's) code, the HTTP
status the client got, and the message; counted by what the client was told (a
code, a dropped connection, nothing); and HAProxy's log of the requests that did
not end well is summarised per replica (``--keep`` keeps all the logs).

    .venv/bin/python benchmarks/fleet_load.py                # 50 clients x 100 calls
    .venv/bin/python benchmarks/fleet_load.py --clients 20 --calls 50 --keep --json

``--src`` (repeatable) compares source trees side by side on one machine: the
replicas of each throughput run import Cartograph from that tree
(``PYTHONPATH``), the runs interleaved tree by tree, ``--rounds`` times, and
the medians per tree reported (the machine's load moves between runs; this
spreads it evenly over the trees).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.fleet import (  # noqa: E402
    Fleet,
    Mode,
    balancer_outcomes,
    prepare,
    running,
)
from tests.helpers.fleet_load import Load, drive  # noqa: E402
from tests.helpers.postgres import Postgres, postgres_server  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def clarity(load: Load) -> dict[str, int]:
    """Failed attempts by what the client was told: a code (which), a dropped connection, nothing.

    A dropped connection is what a client sees when the replica holding its
    request dies: ``RemoteProtocolError`` when HAProxy closes the client's
    connection without an answer, the SDK's ``MCPError`` "SSE stream ended
    without a response" when the replica had begun an event-stream answer
    (sticky mode). Every other failure should carry a code, Cartograph's or the
    balancer's (``http-error`` bodies, docs/fleet.md), e.g. ``unknown_session``
    for a sticky session whose replica is gone.
    """
    seen: Counter[str] = Counter()
    for attempt in load.failed:
        if attempt.code:
            seen[f"code {attempt.code}"] += 1
        elif attempt.kind == "RemoteProtocolError" or "stream ended without" in attempt.error:
            seen["connection dropped"] += 1  # the second: the SDK's word for it mid-SSE-answer
        else:
            seen["no code"] += 1
    return dict(seen.most_common())


def summary(load: Load, fleet: Fleet) -> dict[str, Any]:
    seconds = [a.seconds for a in load.answered]
    return {
        "answered": len(load.answered),
        "failed_attempts": len(load.failed),
        "clients_gave_up": len(load.gave_up),
        "wall_s": round(load.ended - load.started, 2),
        "calls_per_s": round(load.rate, 1),
        "p50_ms": round(_pct(seconds, 0.50) * 1000, 1),
        "p99_ms": round(_pct(seconds, 0.99) * 1000, 1),
        "errors_by_phase": dict(Counter(a.phase for a in load.failed)),
        "errors_by_clarity": clarity(load),
        "errors": load.causes(),
        "error_times_s": sorted(round(a.at, 1) for a in load.failed),
        "balancer": balancer_outcomes(fleet.balancer_log()),
    }


def audit_check(fleet: Fleet, load: Load) -> dict[str, int]:
    per_trace = Counter(trace for trace, _, _ in fleet.audit_rows())
    answered = [a.trace for a in load.answered]
    failed = [a.trace for a in load.failed if a.trace]
    return {
        "answered_calls": len(answered),
        "records": sum(per_trace.values()),
        "answered_without_record": sum(1 for t in answered if per_trace[t] == 0),
        "traces_with_2+_records": sum(1 for n in per_trace.values() if n > 1),
        "failed_attempts_with_record": sum(1 for t in failed if per_trace[t] == 1),
    }


def throughput(
    folder: Path,
    postgres: Postgres,
    replicas: int,
    clients: int,
    calls: int,
    mode: Mode,
    label: str = "",
) -> dict[str, Any]:
    name = f"r{replicas}{label}"
    fleet = prepare(folder / name, postgres, mode, f"bench_{mode}_{name}")
    with running(fleet, replicas):
        load = anyio.run(lambda: drive(fleet.url, clients, calls, mode=mode))
    return {"replicas": replicas, **summary(load, fleet), "audit": audit_check(fleet, load)}


def faults(
    folder: Path, postgres: Postgres, replicas: int, clients: int, calls: int, mode: Mode
) -> dict[str, Any]:
    fleet = prepare(folder / "faults", postgres, mode, f"bench_faults_{mode}")
    total = clients * calls
    events: list[tuple[str, int, float]] = []
    with running(fleet, replicas):
        started = time.monotonic()

        async def inject(answered: int) -> None:
            if answered >= total // 3 and not events:
                events.append(("replica SIGKILL", answered, time.monotonic() - started))
                fleet.kill(1)
            elif answered >= 2 * total // 3 and len(events) == 1:
                events.append(("postgres stop", answered, time.monotonic() - started))
                await anyio.to_thread.run_sync(postgres.stop)
                await anyio.to_thread.run_sync(postgres.start)
                events.append(("postgres started", answered, time.monotonic() - started))

        load = anyio.run(lambda: drive(fleet.url, clients, calls, mode=mode, on_progress=inject))
    return {
        "replicas": replicas,
        "events": events,
        **summary(load, fleet),
        "audit": audit_check(fleet, load),
    }


def compare(
    folder: Path, postgres: Postgres, args: argparse.Namespace
) -> dict[str, dict[str, Any]]:
    """Throughput of each ``--src`` tree, 1 and N replicas, interleaved for ``--rounds``."""
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {src: {} for src in args.src}
    for round_ in range(args.rounds):
        for n in (1, args.replicas):
            for index, src in enumerate(args.src):
                os.environ["PYTHONPATH"] = src  # the replicas (and the CLI) import this tree
                run = throughput(
                    folder, postgres, n, args.clients, args.calls, args.mode, f"s{index}x{round_}"
                )
                runs[src].setdefault(n, []).append(run)
                progress = {"src": src, "round": round_, **run}
                print(json.dumps(progress), file=sys.stderr, flush=True)
    out: dict[str, dict[str, Any]] = {}
    for src, by_n in runs.items():
        rates = {n: sorted(r["calls_per_s"] for r in done) for n, done in by_n.items()}
        medians = {n: statistics.median(values) for n, values in rates.items()}
        out[src] = {
            "calls_per_s": rates,
            "median_calls_per_s": medians,
            "ratio_of_medians": round(medians[args.replicas] / medians[1], 2),
            "failed_attempts": sum(r["failed_attempts"] for done in by_n.values() for r in done),
            "answered_without_record": sum(
                r["audit"]["answered_without_record"] for done in by_n.values() for r in done
            ),
            "traces_with_2+_records": sum(
                r["audit"]["traces_with_2+_records"] for done in by_n.values() for r in done
            ),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--mode", choices=("stateless", "sticky"), default="stateless")
    parser.add_argument("--skip-faults", action="store_true")
    parser.add_argument("--faults-only", action="store_true", help="skip the throughput runs")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--src",
        action="append",
        default=[],
        help="a source tree to compare (repeat; throughput only, interleaved)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --src: runs per tree")
    parser.add_argument(
        "--keep", action="store_true", help="keep the logs (replicas', HAProxy's) and print where"
    )
    args = parser.parse_args()
    report: dict[str, Any] = {
        "clients": args.clients,
        "calls": args.calls,
        "cores": os.cpu_count(),
        "load_average_before": os.getloadavg(),
    }
    with contextlib.ExitStack() as stack:
        if args.keep:
            folder = Path(tempfile.mkdtemp(prefix="cartograph-fleet-bench-"))
            report["kept"] = str(folder)
        else:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cartograph-")))
        with postgres_server() as postgres:
            if args.src:
                report["compare"] = compare(folder, postgres, args)
                report["load_average_after"] = os.getloadavg()
                print(json.dumps(report, indent=2))
                return
            runs = []
            for n in () if args.faults_only else (1, args.replicas):
                runs.append(throughput(folder, postgres, n, args.clients, args.calls, args.mode))
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)  # progress
            report["throughput"] = runs
            if runs:
                report["ratio"] = round(runs[1]["calls_per_s"] / runs[0]["calls_per_s"], 2)
            if not args.skip_faults:
                report["faults"] = faults(
                    folder, postgres, args.replicas, args.clients, args.calls, args.mode
                )
    report["load_average_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for run in report["throughput"]:
        print(
            f"{run['replicas']} replica(s): {run['calls_per_s']} calls/s, p50 {run['p50_ms']} ms, "
            f"p99 {run['p99_ms']} ms, {run['answered']} answered, {run['failed_attempts']} failed"
        )
    if "ratio" in report:
        print(f"ratio {args.replicas}:1 = {report['ratio']} on {report['cores']} cores")
    if "faults" in report:
        f = report["faults"]
        print(f"faults: {f['events']}")
        print(f"  client errors {f['failed_attempts']}; audit {f['audit']}")
    for run in [*report["throughput"], *([report["faults"]] if "faults" in report else [])]:
        label = "faults" if "events" in run else f"{run['replicas']} replica(s)"
        if run["errors"]:
            print(f"  {label}: client was told {run['errors_by_clarity']}")
        for cause, count in run["errors"].items():
            print(f"  {label}: {count:5d} x {cause}")
        for outcome, count in run["balancer"].items():
            print(f"  {label}: HAProxy log {count:5d} x {outcome}")
    print(f"load average {report['load_average_before']} -> {report['load_average_after']}")


if __name__ == "__main__":
    main()
