"""Per-call latency: direct SDK session vs `call` through `cartograph serve` (pooled) vs one-shot.

One run, same upstream (our scriptable stdio server, tool ``add``), 200 calls
each after a warm-up. One-shot is broken down as the paper's §5.5 does:
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

from tests.servers.support import scriptable, toml_for  # noqa: E402

WARMUP = 20


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


async def timed_calls(client: Client, n: int, name: str, args: dict[str, Any]) -> list[float]:
    for _ in range(WARMUP):
        await client.call_tool(name, args)
    out = []
    for _ in range(n):
        start = time.perf_counter()
        result = await client.call_tool(name, args)
        out.append((time.perf_counter() - start) * 1000)
        assert not result.is_error, result
    return out


async def direct(n: int) -> list[float]:
    async with Client(upstream(), mode="legacy") as client:
        return await timed_calls(client, n, "add", {"a": 1, "b": 2})


async def through_proxy(n: int, config: Path, mode: str) -> list[float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cartograph.cli.main", "serve", "--attest-in-memory",
              "--config", str(config), "--mode", mode],
        cwd=str(ROOT),
    )  # fmt: skip
    meta = {"server": "calc", "tool": "add", "arguments": {"a": 1, "b": 2}}
    async with Client(params, mode="legacy") as client:
        await client.call_tool("status", {})  # wait until the catalog is up
        if mode == "oneshot":
            out = []
            for _ in range(n):
                start = time.perf_counter()
                await client.call_tool("call", meta)
                out.append((time.perf_counter() - start) * 1000)
            return out
        return await timed_calls(client, n, "call", meta)


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
        direct_ms = stats(await direct(calls))
        pooled_ms = stats(await through_proxy(calls, config, "pooled"))
        oneshot_ms = stats(await through_proxy(oneshot_calls, config, "oneshot"))
        manual = await oneshot_breakdown(min(oneshot_calls, 10))
    measured = manual["spawn"] + manual["handshake"] + manual["execution"] + manual["teardown"]
    return {
        "direct": direct_ms,
        "pooled": pooled_ms,
        "oneshot": oneshot_ms,
        "pooled_over_direct": round(pooled_ms["mean_ms"] / direct_ms["mean_ms"], 3),
        "pooled_overhead_ms": round(pooled_ms["mean_ms"] - direct_ms["mean_ms"], 3),
        "oneshot_breakdown_ms": {
            **manual,
            "wrapper_overhead": round(oneshot_ms["mean_ms"] - measured, 1),
            "note": "spawn = process start to initialize reply (boot included); "
            "handshake = tools/list; wrapper = proxy one-shot mean minus the by-hand phases",
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--oneshot-calls", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    report = anyio.run(main, options.calls, options.oneshot_calls)
    print(json.dumps(report, indent=2))
