#!/usr/bin/env python3
"""What ``serve`` imports before its first answer, step by step, in CPU time.

    python benchmarks/import_steps.py [--runs 3] [--collector-paused] [--src PATH]

Each run is a fresh interpreter that imports, in the order ``serve`` meets
them, the CLI (typer, click, rich, the command modules), pydantic, the MCP
wire types (``mcp_types``), the rest of the MCP SDK, numpy, Cartograph's
serving modules, the upstream session and the embedding runtime, and prints
the CPU (``time.process_time``) each step added. ``--collector-paused``
turns the cyclic collector off first, as ``serve`` does while it starts
(``startup_gc.py``). ``-X importtime`` says where inside a step the time
goes (``benchmarks/first_answer.py --imports``); its self times are
inflated, these are not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STEPS = (
    ("the CLI: typer, click, rich, the command modules", "cartograph.cli.main"),
    ("pydantic", "pydantic"),
    ("mcp_types (the wire types of two protocol versions)", "mcp_types"),
    ("the rest of mcp (client, server, MCPServer)", "mcp"),
    ("numpy", "numpy"),
    ("Cartograph's serving modules", "cartograph.server.stdio.serve"),
    ("cartograph.upstream.session", "cartograph.upstream.session"),
    ("onnxruntime + tokenizers", "onnxruntime tokenizers"),
)

CHILD = """
import gc, importlib, json, sys, time
if sys.argv[1] == "paused":
    gc.disable()
out, last = [], time.process_time()
for modules in sys.argv[2:]:
    for name in modules.split():
        importlib.import_module(name)
    if modules == "cartograph.cli.main":
        sys.modules[modules].build_app()
    now = time.process_time()
    out.append(round((now - last) * 1e3, 1))
    last = now
print(json.dumps(out))
"""


def one_run(src: Path, paused: bool) -> list[float]:
    """CPU ms per step in a fresh interpreter with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    args = [sys.executable, "-c", CHILD, "paused" if paused else "on", *(m for _, m in STEPS)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    steps: list[float] = json.loads(done.stdout.splitlines()[-1])
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--collector-paused", action="store_true")
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    options = parser.parse_args()
    runs = [one_run(options.src, options.collector_paused) for _ in range(options.runs)]
    print(f"CPU per step, {options.runs} runs (min–max); load average {os.getloadavg()}")
    print("\n| imported, in order | CPU ms |\n|---|---|")
    for (label, _), values in zip(STEPS, zip(*runs, strict=True), strict=True):
        print(f"| {label} | {min(values):.0f}–{max(values):.0f} |")
    totals = [sum(run) for run in runs]
    print(f"| **in all** | **{min(totals):.0f}–{max(totals):.0f}** |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
