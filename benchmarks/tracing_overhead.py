"""What tracing costs: discover and call latency, `[telemetry] traces` off vs on, side by side.

Two ``cartograph serve --http`` processes with the same config but for
``[telemetry]``, in front of the same real streamable-HTTP upstream (the
scriptable ``echo`` server), exporting to a real OTLP/HTTP receiver on
127.0.0.1 (``tests/helpers/otlp.py``). The SDK's streamable-HTTP client calls
both *interleaved* — discover on "off", discover on "on", call on "off", call
on "on" — so load from other processes on a shared machine hits both alike.
Reported per round: median latency of each operation and the serve
process's CPU time per request (user + system, from /proc); then the median
of the round medians and the on/off ratio.

    .venv/bin/python benchmarks/tracing_overhead.py [--rounds 5] [--calls 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.otlp import otlp_receiver  # noqa: E402
from tests.helpers.scriptable import HeaderLog, http_upstream  # noqa: E402
from tests.helpers.serving import ServeProcess, serve_http  # noqa: E402
from tests.http.support import mcp_client, serving  # noqa: E402

MODES = ("off", "on")
WARMUP = 10
TASK = "echo a message back unchanged"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def write_config(folder: Path, upstream: str, endpoint: str | None) -> Path:
    lines = [
        f'state_dir = "{folder / "state"}"',
        "[index]",
        'embedder = "fake"',
        "[servers.echo]",
        f'url = "{upstream}"',
        'transport = "streamable-http"',
    ]
    if endpoint is not None:
        lines += ["[telemetry]", "traces = true", f'endpoint = "{endpoint}"']
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cartograph.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


async def timed(op: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    result = await op()
    elapsed = (time.perf_counter() - started) * 1000.0
    assert not result.is_error, result
    return elapsed


def operations(client: Client) -> dict[str, Callable[[], Awaitable[Any]]]:
    echo = {"server": "echo", "tool": "echo", "arguments": {"message": "hi"}}
    return {
        "discover": lambda: client.call_tool("discover", {"task": TASK, "k": 5}),
        "call": lambda: client.call_tool("call", echo),
    }


async def one_round(
    clients: dict[str, Client], served: dict[str, ServeProcess], calls: int
) -> dict[str, Any]:
    ops = {mode: operations(client) for mode, client in clients.items()}
    samples: dict[str, dict[str, list[float]]] = {m: {"discover": [], "call": []} for m in MODES}
    cpu_before = {m: cpu_seconds(served[m].process.pid) for m in MODES}
    for _ in range(calls):
        for name in ("discover", "call"):
            for mode in MODES:
                samples[mode][name].append(await timed(ops[mode][name]))
    cpu = {
        m: (cpu_seconds(served[m].process.pid) - cpu_before[m]) / (2 * calls) * 1000.0
        for m in MODES
    }
    return {
        mode: {
            **{f"{name}_ms": statistics.median(values) for name, values in samples[mode].items()},
            "cpu_ms_per_request": cpu[mode],
        }
        for mode in MODES
    }


async def measure(served: dict[str, ServeProcess], rounds: int, calls: int) -> list[dict[str, Any]]:
    async with (
        mcp_client(f"{served['off'].base}/mcp") as off,
        mcp_client(f"{served['on'].base}/mcp") as on,
    ):
        clients = {"off": off, "on": on}
        for _ in range(WARMUP):
            for client in clients.values():
                for op in operations(client).values():
                    await op()
        return [await one_round(clients, served, calls) for _ in range(rounds)]


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("discover_ms", "call_ms", "cpu_ms_per_request")
    medians = {m: {k: statistics.median(r[m][k] for r in results) for k in keys} for m in MODES}
    ratios = {k: medians["on"][k] / medians["off"][k] for k in keys}
    return {"median_of_rounds": medians, "on_over_off": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100, help="per operation per round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OTEL_BSP_SCHEDULE_DELAY", "1000")
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        receiver = stack.enter_context(otlp_receiver())
        upstream = f"{stack.enter_context(serving(http_upstream(HeaderLog())))}/mcp"
        served = {
            "off": stack.enter_context(serve_http(write_config(Path(tmp) / "off", upstream, None))),
            "on": stack.enter_context(
                serve_http(write_config(Path(tmp) / "on", upstream, receiver.endpoint))
            ),
        }
        results = anyio.run(measure, served, args.rounds, args.calls)
        receiver.wait_for(lambda spans: len(spans) > 0, limit=10)
        exported = len(receiver.spans)
    report = {"rounds": results, **summary(results), "spans_received": exported}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for index, result in enumerate(results, 1):
        cells = "  ".join(
            f"{m}: discover {result[m]['discover_ms']:.2f} ms, call {result[m]['call_ms']:.2f} ms, "
            f"cpu {result[m]['cpu_ms_per_request']:.2f} ms/req"
            for m in MODES
        )
        print(f"round {index}: {cells}")
    medians, ratios = report["median_of_rounds"], report["on_over_off"]
    for key in ("discover_ms", "call_ms", "cpu_ms_per_request"):
        print(
            f"{key:>20}: off {medians['off'][key]:.2f}  on {medians['on'][key]:.2f}  "
            f"on/off {ratios[key]:.2f}"
        )
    print(f"spans received by the OTLP receiver: {exported}")


if __name__ == "__main__":
    main()
