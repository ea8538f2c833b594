"""Instructions a proxy process executes per ``call``: a count, not a timing.

On a shared machine wall clock and even CPU time move with the load by more
than a change to the call path does; an instruction count does not (two runs
agree to 0.2 %). Each proxy runs under valgrind's callgrind with collection
switched off, is warmed up, then counted over ``--calls`` calls of the
scriptable upstream's ``add`` (all threads of the proxy process):

- ``pooled``: ``call`` through ``cartograph serve`` (every check on, audit to a file);
- ``bare``: ``bare_forwarder.py`` on the event-loop wire, the SDK with no checks.

``--src DIR`` runs ``cartograph serve`` from another tree's ``src`` (this
environment's dependencies), to compare two trees.

    .venv/bin/python benchmarks/call_instructions.py [--calls 200] [--src ../other/src] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import gateway_latency  # noqa: E402
from tests.helpers.support import scriptable, toml_for  # noqa: E402

WARMUP = 30
TOTALS = re.compile(r"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


def under_callgrind(
    inner: StdioServerParameters, out: Path, src: str | None
) -> StdioServerParameters:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return StdioServerParameters(
        command="valgrind",
        args=["--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
              inner.command, *inner.args],
        cwd=inner.cwd,
        env=env,
    )  # fmt: skip


def proxy_pid(out: Path) -> str:
    """The valgrind process writing ``out`` (its command line names the file)."""
    found = subprocess.run(
        ["pgrep", "-f", f"callgrind-out-file={out}"], capture_output=True, text=True, check=True
    )
    return found.stdout.split()[0]


def control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True)


async def count(kind: str, calls: int, src: str | None, tmp: Path) -> float:
    """Millions of instructions per call of ``kind`` (pooled or bare)."""
    config = tmp / "cartograph.toml"
    config.write_text(
        toml_for(tmp / "state", scriptable("calc"), audit_log=str(tmp / "audit.jsonl"))
    )
    inner = (
        gateway_latency.proxy_params(config, "pooled")
        if kind == "pooled"
        else gateway_latency.bare_params("loop")
    )
    out = tmp / f"callgrind.{kind}.out"
    tool, args = ("add", {"a": 1, "b": 2})
    if kind == "pooled":
        tool, args = "call", {"server": "calc", "tool": tool, "arguments": args}
    async with Client(under_callgrind(inner, out, src), mode="legacy") as client:
        if kind == "pooled":
            await client.call_tool("status", {})  # the catalog is up
        for _ in range(WARMUP):
            await client.call_tool(tool, args)
        target = proxy_pid(out)
        control("-i", "on", target)
        for _ in range(calls):
            result = await client.call_tool(tool, args)
            assert not result.is_error, result
        control("-i", "off", target)
        control("-d", target)
    return round(counted(out) / calls / 1e6, 3)


def counted(out: Path) -> int:
    """Instructions in the dump taken while collection was on (the largest ``totals``)."""
    files = out.parent.glob(f"{out.name}*")
    return max(int(m) for f in files for m in TOTALS.findall(f.read_text()))


async def main(calls: int, src: str | None) -> dict[str, Any]:
    report: dict[str, Any] = {"calls": calls, "src": src or "this tree"}
    for kind in ("pooled", "bare"):
        with tempfile.TemporaryDirectory() as tmp:
            report[f"{kind}_M_instructions_per_call"] = await count(kind, calls, src, Path(tmp))
    report["ours_M_instructions_per_call"] = round(
        report["pooled_M_instructions_per_call"] - report["bare_M_instructions_per_call"], 3
    )
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--src", default=None, help="run cartograph serve from this src dir")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: nothing to count with")
    src = str(Path(options.src).resolve()) if options.src else None
    report = anyio.run(main, options.calls, src)
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:32} {value}")
