"""Per-call latency: direct SDK session vs `call` through `cartograph serve` (pooled) vs one-shot.

One run, same upstream (our scriptable stdio server), two tools: ``add``
(answers in well under 1 ms: the worst case for relative overhead) and
``sleep`` for 20 ms (a tool that does some I/O-bound work, closer to a real
one). Every row's calls are *interleaved* — call i goes direct, then through
each path in turn — so load from other processes on a shared machine hits
all alike; 200 timed calls each after a warm-up. The rows:

- ``direct``: an SDK client on a kept-open session to the upstream.
- ``pooled``: ``call`` through ``cartograph serve`` on stdio, every check on
  (validation, policy, card integrity, drift, secret scan, limits, metrics,
  spans) and the audit trail written to a file.
- ``bare_loop`` / ``bare_sdk``: the floor, ``bare_forwarder.py`` (the same SDK,
  no checks at all) with our event-loop stdio wire or the SDK's threaded one.
- ``http_pooled`` / ``http_bare``: the same two over streamable HTTP on
  127.0.0.1 (the upstream stays on stdio; overhead is still against ``direct``).
- fastmcp's proxy is a peer row only where ``fastmcp`` is installed
  (it is not in the lock).

One-shot is broken down as the paper's §5.5 does:
spawn (process start until the initialize reply: interpreter boot included),
handshake (initialize + tools/list), execution (tools/call), teardown, and
the wrapper overhead (total minus the measured parts).

    .venv/bin/python benchmarks/gateway_latency.py [--calls 200] [--oneshot-calls 30] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.serving import serve_http  # noqa: E402
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
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 3),
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


def bare_params(wire: str) -> StdioServerParameters:
    up = upstream()
    return StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "benchmarks" / "bare_forwarder.py"), "--wire", wire,
              "--", up.command, *up.args],
        cwd=str(ROOT),
    )  # fmt: skip


BARE_URL = re.compile(rb"bare serving on (http://\S+)")


@contextlib.contextmanager
def bare_http() -> Iterator[str]:
    """``bare_forwarder.py --http`` running; yields its URL once it is announced."""
    up = upstream()
    command = [sys.executable, str(ROOT / "benchmarks" / "bare_forwarder.py"), "--http"]
    process = subprocess.Popen(
        [*command, "--", up.command, *up.args], stderr=subprocess.PIPE, cwd=ROOT
    )
    assert process.stderr is not None
    try:
        said = b""
        while (found := BARE_URL.search(said)) is None:
            chunk = os.read(process.stderr.fileno(), 4096)
            if not chunk:
                raise RuntimeError(f"bare forwarder ended: {said.decode(errors='replace')}")
            said += chunk
        yield found.group(1).decode()
    finally:
        process.kill()
        process.wait(timeout=30)
        process.stderr.close()


@contextlib.asynccontextmanager
async def http_client(url: str) -> AsyncIterator[Client]:
    async with Client(streamable_http_client(url), mode="legacy") as client:
        yield client


def fastmcp_params() -> StdioServerParameters | None:
    """fastmcp's ``create_proxy`` over the upstream, where fastmcp is installed."""
    try:
        import fastmcp  # noqa: F401  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    up = upstream()
    script = (
        "import sys; from fastmcp.server import create_proxy; "
        "create_proxy({'mcpServers': {'calc': {'command': sys.argv[1], 'args': sys.argv[2:]}}})"
        ".run(show_banner=False)"
    )
    return StdioServerParameters(command=sys.executable, args=["-c", script, up.command, *up.args])


async def timed(client: Client, name: str, args: dict[str, Any]) -> float:
    start = time.perf_counter()
    result = await client.call_tool(name, args)
    elapsed = (time.perf_counter() - start) * 1000
    assert not result.is_error, result
    return elapsed


Row = tuple[Client, bool]
"""A client and whether it reaches the tool through Cartograph's ``call`` meta-tool."""


async def interleaved(n: int, config: Path, stack: contextlib.AsyncExitStack) -> Samples:
    """For each tool: n calls per row, the rows taken in turn, on kept-open sessions."""
    rows: dict[str, Row] = {
        "direct": (await stack.enter_async_context(Client(upstream(), mode="legacy")), False),
        "pooled": (await stack.enter_async_context(
            Client(proxy_params(config, "pooled"), mode="legacy")), True),
        "bare_loop": (await stack.enter_async_context(
            Client(bare_params("loop"), mode="legacy")), False),
        "bare_sdk": (await stack.enter_async_context(
            Client(bare_params("sdk"), mode="legacy")), False),
    }  # fmt: skip
    peer = fastmcp_params()
    if peer is not None:
        rows["fastmcp"] = (await stack.enter_async_context(Client(peer, mode="legacy")), False)
    served = stack.enter_context(serve_http(config))
    rows["http_pooled"] = (await stack.enter_async_context(http_client(served.mcp)), True)
    bare_url = stack.enter_context(bare_http())
    rows["http_bare"] = (await stack.enter_async_context(http_client(bare_url)), False)
    for client, meta in rows.values():
        if meta:
            await client.call_tool("status", {})  # wait until the catalog is up
    out: Samples = {}
    for label, (tool, args) in TOOLS.items():
        wrapped = {"server": "calc", "tool": tool, "arguments": args}
        calls = {
            row: ("call", wrapped) if meta else (tool, args) for row, (_, meta) in rows.items()
        }
        for _ in range(WARMUP):
            for row, (client, _) in rows.items():
                await timed(client, *calls[row])
        samples: dict[str, list[float]] = {row: [] for row in rows}
        for _ in range(n):
            for row, (client, _) in rows.items():
                samples[row].append(await timed(client, *calls[row]))
        out[label] = samples
    return out


Samples = dict[str, dict[str, list[float]]]


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
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "cartograph.toml"
        audit = Path(tmp) / "audit.jsonl"  # every call's record written, as in production
        config.write_text(toml_for(Path(tmp) / "state", scriptable("calc"), audit_log=str(audit)))
        async with contextlib.AsyncExitStack() as stack:
            runs = await interleaved(calls, config, stack)
        oneshot_ms = stats(await oneshot(oneshot_calls, config))
        manual = await oneshot_breakdown(min(oneshot_calls, 10))
    report: dict[str, Any] = {"load_average": {"before": load_before, "after": os.getloadavg()}}
    if fastmcp_params() is None:
        report["fastmcp"] = "not installed (not in the lock): no peer row"
    for label, samples in runs.items():
        rows = {row: stats(values) for row, values in samples.items()}
        direct = rows["direct"]
        report[label] = {
            "tool": TOOLS[label][0],
            **rows,
            "overhead_over_direct_ms": {
                row: {
                    "p50": round(row_stats["median_ms"] - direct["median_ms"], 3),
                    "p99": round(row_stats["p99_ms"] - direct["p99_ms"], 3),
                    "mean": round(row_stats["mean_ms"] - direct["mean_ms"], 3),
                }
                for row, row_stats in rows.items()
                if row != "direct"
            },
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


def table(report: dict[str, Any]) -> str:
    """The overheads as a text table: one line per row and tool, p50 / p99 / mean in ms."""
    head = f"{'tool':6} {'row':12} {'p50':>8} {'p99':>8} {'over p50':>9} {'over p99':>9}"
    load = report["load_average"]
    lines = [f"load average before {load['before']}, after {load['after']}", head]
    for label in TOOLS:
        part = report[label]
        for row, over in [("direct", None), *part["overhead_over_direct_ms"].items()]:
            s = part[row]
            extra = f"{over['p50']:>9.3f} {over['p99']:>9.3f}" if over else ""
            lines.append(f"{label:6} {row:12} {s['median_ms']:>8.3f} {s['p99_ms']:>8.3f} {extra}")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--oneshot-calls", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    report = anyio.run(main, options.calls, options.oneshot_calls)
    print(json.dumps(report, indent=2) if options.json else table(report))
