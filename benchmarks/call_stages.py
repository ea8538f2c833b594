"""Where one pooled ``call`` spends its CPU: each pipeline step timed in place.

The proxy serves the official SDK client in memory (the MCP server and its
handlers exactly as ``serve`` builds them) in front of the scriptable stdio
upstream; every step of :mod:`cartograph.calls.pipeline`, the audit record and
its write, the ``/metrics`` count and the upstream session's call (the SDK's
client hop) are wrapped with a thread-CPU timer for ``--calls`` calls after a
warm-up. In place a step costs several times what it costs in a tight loop (its
code is no longer in cache), which is why this measures it where it runs.

    .venv/bin/python benchmarks/call_stages.py [--calls 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.support import scriptable  # noqa: E402
from tests.server.support import running  # noqa: E402

from cartograph.calls import pipeline  # noqa: E402
from cartograph.server import handlers as handlers_module  # noqa: E402
from cartograph.server.proxy import build_proxy_server  # noqa: E402
from cartograph.upstream.session import UpstreamSession  # noqa: E402

WARMUP = 100
SPENT: defaultdict[str, int] = defaultdict(int)
ON = [False]


def timed_async(name: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time_ns()
        try:
            return await fn(*args, **kwargs)
        finally:
            if ON[0]:
                SPENT[name] += time.thread_time_ns() - start

    return wrapper


def timed_sync(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            if ON[0]:
                SPENT[name] += time.thread_time_ns() - start

    return wrapper


def instrument() -> None:
    """Wrap each step and the parts around them (this process only)."""
    pipeline.ADMISSION = tuple(timed_async(s.__name__, s) for s in pipeline.ADMISSION)
    pipeline.TOOL_CALL = tuple(timed_async(s.__name__, s) for s in pipeline.TOOL_CALL)
    pipeline.write_record = timed_async("audit write", pipeline.write_record)  # type: ignore[assignment]
    pipeline.audit_record = timed_sync("audit record", pipeline.audit_record)  # type: ignore[assignment]
    proxy = handlers_module.ProxyHandlers
    proxy._observe = timed_sync("metrics", proxy._observe)  # type: ignore[method-assign]
    proxy.run_call = timed_async("handlers.run_call (all of it)", proxy.run_call)  # type: ignore[method-assign]
    UpstreamSession.call_tool = timed_async(  # type: ignore[method-assign]
        "  upstream session call (SDK client hop)", UpstreamSession.call_tool
    )


async def measure(calls: int) -> dict[str, float]:
    instrument()
    with tempfile.TemporaryDirectory() as tmp:
        audit = Path(tmp) / "audit.jsonl"
        async with (
            running(Path(tmp), scriptable("calc"), audit_log=audit) as handlers,
            Client(build_proxy_server(handlers), mode="legacy") as client,
        ):
            meta = {"server": "calc", "tool": "add", "arguments": {"a": 1, "b": 2}}
            for _ in range(WARMUP):
                await client.call_tool("call", meta)
            ON[0] = True
            start = time.thread_time_ns()
            for _ in range(calls):
                result = await client.call_tool("call", meta)
                assert not result.is_error, result
            whole = time.thread_time_ns() - start
            ON[0] = False
    out = {name: round(ns / calls / 1000, 1) for name, ns in SPENT.items()}
    out["this process, all of it (client, server, proxy)"] = round(whole / calls / 1000, 1)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    report = anyio.run(measure, options.calls)
    if options.json:
        print(json.dumps({"load_average": os.getloadavg(), "us_per_call": report}, indent=2))
    else:
        print(f"load average {os.getloadavg()}; thread CPU per call, µs")
        for name, value in report.items():
            print(f"{name:52} {value:8.1f}")
