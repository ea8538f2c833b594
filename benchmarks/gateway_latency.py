"""Per-call latency: direct SDK session vs `call` through `cartograph serve` (pooled) vs one-shot.

One run, same upstream (our scriptable stdio server), two tools: ``add``
(answers in well under 1 ms: the worst case for relative overhead) and
``sleep`` for 20 ms (a tool that does some I/O-bound work, closer to a real
one). Direct and pooled calls are *interleaved* — call i goes direct, then
through the proxy — so load from other processes on a shared machine hits
both alike; 200 timed calls each after a warm-up. One-shot is broken down
as the paper's §5.5 does:
spawn (process start until the initialize reply: interpreter boot included),
handshake (initialize + tools/list), execution (tools/call), teardown, and
the wrapper overhead (total minus the measured parts).

    .venv/bin/python benchmarks/gateway_latency.py [--calls 200] [--oneshot-calls 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.support import scriptable, toml_for  # noqa: E402

WARMUP = 20
TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "fast": ("add", {"a": 1, "b": 2}),
    "20ms": ("sleep", {"seconds": 0.02}),
}


def upstream() -> StdioServerParameters:
    cfg = scriptable("calc")
    return StdioServerParameters(command=cfg.command or "", args=list(cfg.args))


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(samples),
        "mean_ms": round(statistics.fmean(samples), 3),
        "median_ms": round(statistics.median(samples), 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "stdev_ms": round(statistics.pstdev(samples), 3),
        "min_ms": round(ordered[0], 3),
        "max_ms": round(ordered[-1], 3),
    }


def proxy_params(config: Path, mode: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key",
              "--config", str(config), "--mode", mode],
        cwd=str(ROOT),
    )  # fmt: skip


async def timed(client: Client, name: str, args: dict[str, Any]) -> float:
    start = time.perf_counter()
    result = await client.call_tool(name, args)
    elapsed = (time.perf_counter() - start) * 1000
    assert not result.is_error, result
    return elapsed


async def interleaved(n: int, config: Path) -> dict[str, dict[str, list[float]]]:
    """For each tool: n direct and n pooled calls, alternating, on kept-open sessions."""
    out: dict[str, dict[str, list[float]]] = {}
    async with (
        Client(upstream(), mode="legacy") as direct,
        Client(proxy_params(config, "pooled"), mode="legacy") as proxy,
    ):
        await proxy.call_tool("status", {})  # wait until the catalog is up
        for label, (tool, args) in TOOLS.items():
            meta = {"server": "calc", "tool": tool, "arguments": args}
            for _ in range(WARMUP):
                await timed(direct, tool, args)
                await timed(proxy, "call", meta)
            samples: dict[str, list[float]] = {"direct": [], "pooled": []}
            for _ in range(n):
                samples["direct"].append(await timed(direct, tool, args))
                samples["pooled"].append(await timed(proxy, "call", meta))
            out[label] = samples
    return out


async def oneshot(n: int, config: Path) -> list[float]:
    tool, args = TOOLS["fast"]
    meta = {"server": "calc", "tool": tool, "arguments": args}
    async with Client(proxy_params(config, "oneshot"), mode="legacy") as client:
        await client.call_tool("status", {})
        return [await timed(client, "call", meta) for _ in range(n)]


async def oneshot_breakdown(n: int) -> dict[str, Any]:
    """The paper's one-shot pattern done by hand, timing each phase."""
    parts: dict[str, list[float]] = {
        k: [] for k in ("spawn", "handshake", "execution", "teardown", "total")
    }
    for _ in range(n):
        t0 = time.perf_counter()
        transport = stdio_client(upstream())
        client = Client(transport, mode="legacy")
        await client.__aenter__()  # spawn + boot + initialize
        t1 = time.perf_counter()
        await client.list_tools()
        t2 = time.perf_counter()
        await client.call_tool("add", {"a": 1, "b": 2})
        t3 = time.perf_counter()
        await client.__aexit__(None, None, None)
        t4 = time.perf_counter()
        parts["spawn"].append((t1 - t0) * 1000)
        parts["handshake"].append((t2 - t1) * 1000)
        parts["execution"].append((t3 - t2) * 1000)
        parts["teardown"].append((t4 - t3) * 1000)
        parts["total"].append((t4 - t0) * 1000)
    return {k: round(statistics.fmean(v), 1) for k, v in parts.items()}


async def main(calls: int, oneshot_calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "cartograph.toml"
        config.write_text(toml_for(Path(tmp) / "state", scriptable("calc")))
        runs = await interleaved(calls, config)
        oneshot_ms = stats(await oneshot(oneshot_calls, config))
        manual = await oneshot_breakdown(min(oneshot_calls, 10))
    report: dict[str, Any] = {}
    for label, samples in runs.items():
        direct_ms, pooled_ms = stats(samples["direct"]), stats(samples["pooled"])
        report[label] = {
            "tool": TOOLS[label][0],
            "direct": direct_ms,
            "pooled": pooled_ms,
            "pooled_over_direct_median": round(pooled_ms["median_ms"] / direct_ms["median_ms"], 3),
            "pooled_over_direct_mean": round(pooled_ms["mean_ms"] / direct_ms["mean_ms"], 3),
            "pooled_overhead_median_ms": round(pooled_ms["median_ms"] - direct_ms["median_ms"], 3),
        }
    measured = manual["spawn"] + manual["handshake"] + manual["execution"] + manual["teardown"]
    report["oneshot"] = oneshot_ms
    report["oneshot_breakdown_ms"] = {
        **manual,
        "wrapper_overhead": round(oneshot_ms["mean_ms"] - measured, 1),
        "note": "spawn = process start to initialize reply (boot included); "
        "handshake = tools/list; wrapper = proxy one-shot mean minus the by-hand phases",
    }
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--oneshot-calls", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    report = anyio.run(main, options.calls, options.oneshot_calls)
    print(json.dumps(report, indent=2))
