"""Issue 29's side-by-side table in one run: start-up, a first-seen discover, a call's overhead.

    python benchmarks/blink.py --src 0774969=PATH/src --python 0774969=EXE \\
        --src 31dec07=PATH/src [--runs 5] [--queries 95] [--calls 200] [--json]

One command runs the three benchmarks that own the figures, one after the other, and
puts their medians in one table (a column per tree, this checkout last):

- ``first_answer.py --throwaway``: ``serve`` spawned → first ``discover`` answered (wall
  and the server's CPU), and ``cartograph discover`` from the CLI (CPU), each tree
  bootstrapping its own throwaway state, spawns interleaved;
- ``discover_latency.py --scales livemcpbench``: a first-seen task's ``discover`` at 527
  tools (CPU p50, every task first seen), with BM25 alone (``bm25``) and the bare model
  forward of a task (the embedder row) as floors;
- ``gateway_latency.py``: a pooled ``call``'s overhead over a direct SDK call, stdio and
  streamable HTTP, with the SDK-only forwarder (no checks) as the floor and fastmcp's
  proxy as the peer where it is installed (``uv sync --extra bench``). It measures this
  checkout: older trees' call paths are in the issue's own measurement.

Each figure is printed with the load average the machine had while it was measured.
Older trees need their own environment where their code imports what this lock lacks
(0774969 imports ``httpx``): ``--python NAME=EXE``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from trees import add_tree_options, column_head, tree_args  # noqa: E402


def run_json(script: str, args: list[str]) -> dict[str, Any]:
    """One benchmark with ``--json``; its progress goes to our stderr."""
    command = [sys.executable, str(HERE / script), *args, "--json"]
    print(f"blink: {' '.join(command[1:])}", file=sys.stderr)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"blink: {script} failed:\n{done.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def measure(options: argparse.Namespace) -> dict[str, Any]:
    trees = tree_args(options.src, options.python)
    start = run_json("first_answer.py", ["--throwaway", "--runs", str(options.runs), *trees])
    latency = run_json(
        "discover_latency.py",
        [
            *("--scales", "livemcpbench", "--methods", "hybrid"),
            *("--queries", str(options.queries), *trees, "--src", f"this={ROOT / 'src'}"),
        ],
    )
    calls = run_json("gateway_latency.py", ["--calls", str(options.calls), "--oneshot-calls", "3"])
    floor = bm25s_floor(options.queries)
    return {
        "first_answer": start,
        "discover_latency": latency,
        "bm25s_floor": floor,
        "gateway_latency": calls,
    }


def bm25s_floor(queries: int) -> dict[str, float]:
    """bm25s alone over LiveMCPBench's tool names and descriptions: CPU p50 per query.

    The floor a lexical-only index reaches: no model, no fusion, no cards.
    """
    import statistics
    import time

    import bm25s
    from discover_latency import bench_dir

    from cartograph.eval.data import load_queries

    bench = bench_dir() / "livemcpbench"
    catalog = json.loads((bench / "catalog.json").read_text(encoding="utf-8"))
    texts = [
        f"{tool['name']} {tool.get('description') or ''}"
        for server in catalog["servers"]
        for tool in server["tools"]
    ]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
    tasks = [q.query for q in load_queries(bench / "queries.jsonl")][:queries]
    cpu = []
    for task in tasks:
        start = time.process_time()
        retriever.retrieve(bm25s.tokenize([task], show_progress=False), k=5, show_progress=False)
        cpu.append((time.process_time() - start) * 1000)
    return {"cpu_p50_ms": round(statistics.median(cpu), 3), "tools": len(texts)}


def _median(block: dict[str, Any], key: str) -> float | None:
    value = block.get(key, {})
    return value.get("median") if isinstance(value, dict) else None


def table(report: dict[str, Any]) -> str:
    """The side-by-side table as markdown, each section with its load average."""
    start = report["first_answer"]
    names = [n for n in start["results"] if n != "this"] + ["this"]
    lines = [
        f"Start-up (`first_answer.py`, {start['runs']} spawns each, medians, load average "
        f"{_load(start['load_average'])}):",
        "",
        *column_head(names),
    ]
    for label, key, unit in (
        ("`serve` spawned → first `discover` answered (wall)", "first_discover_ms", "s"),
        ("`serve`'s CPU until that answer", "first_discover_cpu_ms", "s"),
        ("CLI `discover` (CPU)", "cli_discover_cpu_ms", "s"),
        ("CLI `--help` (CPU)", "help_cpu_ms", "s"),
    ):
        cells = [_fmt(_median(start["results"][n], key), unit) for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    latency = report["discover_latency"]
    rows = {r["source"]: r for r in latency["rows"] if r["scale"] != "embedder"}
    forward = {r["source"]: r for r in latency["rows"] if r["scale"] == "embedder"}
    order = [n for n in names if n in rows]
    lines += [
        "",
        f"A first-seen task at 527 tools (`discover_latency.py --scales livemcpbench`, every "
        f"task first seen, CPU p50; load average {_load(latency['loadavg'])}):",
        "",
        *column_head(order),
        "| hybrid `discover` (CPU p50) | "
        + " | ".join(_fmt(rows[n]["methods"]["hybrid"]["cpu_p50_ms"], "ms") for n in order)
        + " |",
        "| floor: one bare model forward of a task (p50) | "
        + " | ".join(
            _fmt(forward[n].get("task_query_p50_ms"), "ms") if n in forward else "—" for n in order
        )
        + " |",
    ]
    floor = report["bm25s_floor"]
    lines += [
        "",
        f"Floor: bm25s alone over the same {floor['tools']} tools' names and descriptions, "
        f"top 5: {floor['cpu_p50_ms']:.2f} ms CPU p50 per task.",
    ]
    calls = report["gateway_latency"]
    lines += [
        "",
        f"A call (`gateway_latency.py`, this checkout, interleaved rows; load average "
        f"{_load(calls['load_average']['before'])} → {_load(calls['load_average']['after'])}):",
        "",
        "| over a direct SDK call, `add` | p50 | p99 |",
        "|---|---|---|",
    ]
    fast = calls["fast"]
    for row, over in fast["overhead_over_direct_ms"].items():
        lines.append(f"| {row} | {over['p50']:+.2f} ms | {over['p99']:+.2f} ms |")
    if "fastmcp" in calls:
        lines.append(f"| fastmcp | {calls['fastmcp']} | |")
    return "\n".join(lines)


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if unit == "s" else f"{value:.2f} ms"


def _load(values: list[float]) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_tree_options(parser, python_help="NAME=EXE for --src NAME")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=95)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    report = measure(options)
    report["cpus"] = os.cpu_count()
    print(json.dumps(report, indent=2) if options.json else table(report))


if __name__ == "__main__":
    main()
