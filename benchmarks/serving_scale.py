#!/usr/bin/env python3
"""What a serving process costs at 527, 10k and 100k tools: the operator's path.

    python benchmarks/serving_scale.py [--scales livemcpbench,10000,100000]
        [--src NAME=PATH ...] [--json]

``discover_latency.py`` builds cards in the measured process (it holds the
catalog, the generator's text and the signing key too); an operator's
``cartograph serve`` does not. Here a *prepare* subprocess writes template
cards, signed by a persisted key, into a card store on disk, plus a trust
file and the embedding cache (composed vectors at 10k/100k, exactly as in
``discover_latency.prepare``; real MiniLM vectors at 527): that step, and the
changes ``--restarts`` makes between restarts, are ``serving_store.py``. A
*separate* measured subprocess then does only what ``serve`` does at start-up
and per query:

1. *verify*: the signed snapshot manifest's one signature (where the checkout has one);
2. *load*: the cards as start-up loads them: each file hashed against the manifest
   (older checkouts also parse and re-digest every card here), or each card verified;
3. *index*: ``ToolIndex.build(cards, minilm, cache=..., store=...)``: the persisted
   serving corpus where the checkout has one, else the index built from the persisted
   per-card vector blocks (or the embedding cache, older checkouts);
4. ``discover()`` per method, query embedding included.

It reports time per phase (start-up = verify + load + index), RSS after each
phase and the serving process's peak (``ru_maxrss``). With ``--runs N`` the
measured child runs N times per source (sources interleaved; the store is
prepared once) and every figure is the median over the runs.

``--src NAME=PATH`` (repeatable) runs the measured children against another
checkout's ``src`` (e.g. a ``git worktree`` of an older commit), so before and
after are measured side by side in one run on the same machine load. With
``--state-dir`` a store prepared by an earlier run is reused. ``--python
NAME=EXE`` runs that source's children (prepare included) with another
interpreter, one whose environment was built from that tree's own lock or
``pyproject.toml`` (older trees import ``httpx``, newer ones ``httpx2``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from serving_store import CHANGES, change, prepare, resign, store_for  # noqa: E402
from trees import add_tree_options, interpreters_from, sources_or_bare  # noqa: E402

TARGETS = {"livemcpbench": "p50 <= 5 ms", "100000": "p50 <= 25 ms, peak RSS <= 400 MB"}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def rss_mb() -> float:
    """Current resident set size (``VmRSS``), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- measure: what serve does ---------------------------------------------------


def tasks_for(scale: str, count: int) -> list[str]:
    from discover_latency import bench_dir
    from synthetic_catalog import synthetic_queries

    if scale != "livemcpbench":
        return synthetic_queries(count)
    from cartograph.eval.data import load_queries

    return [q.query for q in load_queries(bench_dir() / "livemcpbench" / "queries.jsonl")][:count]


def measure(
    scale: str, state: Path, queries: int, methods: list[str], agreement: bool = True
) -> dict[str, Any]:
    from discover_latency import _time_discover

    rss_start = rss_mb()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    from cartograph.cards.store import CardStore
    from cartograph.cards.trust import load_trust
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.discover import discover
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    tasks = tasks_for(scale, queries)
    rss_imported = rss_mb()
    store, trust = CardStore(state), load_trust(state / "trust.toml")
    t1 = time.perf_counter()
    _verify_manifest(store, trust)
    t_verified = time.perf_counter()
    cards = _load_cards(store, trust)
    gc.collect()
    t2 = time.perf_counter()
    rss_cards = rss_mb()
    cache = EmbeddingCache(state)
    index = ToolIndex.build(cards, get_embedder("minilm"), cache=cache, **store_for(state))
    gc.collect()
    t3 = time.perf_counter()
    cpu3 = time.process_time()
    rss_index = rss_mb()
    first = time.perf_counter()
    discover(index, cards, tasks[0])  # loads the model: the cache served every tool
    first_ms = (time.perf_counter() - first) * 1000
    row: dict[str, Any] = {
        "scale": scale,
        "tools": index.size,
        "servers": len(cards),
        "queries": len(tasks),
        "import_s": round(t1 - t0, 2),
        "verify_s": round(t_verified - t1, 2),
        "load_s": round(t2 - t_verified, 2),
        "load_verify_s": round(t2 - t1, 2),
        "index_build_s": round(t3 - t2, 2),
        "startup_s": round(t3 - t1, 2),
        "startup_cpu_s": round(cpu3 - cpu0, 2),
        "embedded_now": cache.last.misses,
        "first_query_ms": round(first_ms, 1),
        "rss_start_mb": round(rss_start, 1),
        "rss_imported_mb": round(rss_imported, 1),
        "rss_cards_mb": round(rss_cards, 1),
        "rss_index_mb": round(rss_index, 1),
        "peak_rss_build_mb": round(peak_rss_mb(), 1),
        "methods": {m: _time_discover(index, cards, tasks, m) for m in methods},
    }
    row["rank_cpu_p50_ms"] = _rank_cpu_p50(index, tasks) if methods else None
    row["agreement"] = _prefilter_agreement(index, tasks) if agreement and methods else None
    row["rss_end_mb"] = round(rss_mb(), 1)
    row["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return row


def _verify_manifest(store: Any, trust: Any) -> None:
    """The manifest's one signature, where this checkout has a manifest."""
    try:
        from cartograph.cards.manifest import read_manifest
    except ImportError:
        return
    read_manifest(store, trust)


def _rank_cpu_p50(index: Any, tasks: list[str]) -> float:
    """CPU p50 of the default ranker alone (query embedding and confidence included).

    ``discover`` also reads each answered tool's reply: after a restart from its
    server's reply table (hash-checked on first use), or in checkouts without
    tables from its verified card (parsed on first use); by now the methods
    above have read every table or card these tasks answer with, so this is
    what a query costs without that, the steady state.
    """
    from discover_latency import best_similarity, forget_query_vectors

    cpu = []
    for task in tasks:
        forget_query_vectors()
        start = time.process_time()
        ctx = index.context(task)
        index.rank(ctx, 5)
        best_similarity(ctx)
        cpu.append((time.process_time() - start) * 1000)
    return round(statistics.median(cpu), 2)


def _prefilter_agreement(index: Any, tasks: list[str]) -> dict[str, float] | None:
    """How often the hybrid with its candidate prefilter returns the exact hybrid's top 5.

    None where the checkout has no prefilter or the index is too small to use it.
    """
    limit = getattr(index, "prefilter_min_tools", None)
    if limit is None or index.size < limit:
        return None
    same_set = same_order = 0
    for task in tasks:
        fast = [i for i, _ in index.rank(task, 5)]
        index.prefilter_min_tools = None
        exact = [i for i, _ in index.rank(task, 5)]
        index.prefilter_min_tools = limit
        same_set += set(fast) == set(exact)
        same_order += fast == exact
    return {
        "top5_same_set": round(same_set / len(tasks), 3),
        "top5_same_order": round(same_order / len(tasks), 3),
    }


def _load_cards(store: Any, trust: Any) -> Any:
    """What start-up does: the manifest path where this checkout has it, else each card."""
    try:
        from cartograph.cards.manifest import load_with_manifest
    except ImportError:
        return store.load_verified(trust)
    report = load_with_manifest(store, trust)
    if report is None:
        return store.load_verified(trust)
    if report.failures:
        raise SystemExit(f"cards not served: {dict(list(report.failures.items())[:3])}")
    return report.verified


# --- driver -----------------------------------------------------------------------


PYTHONS: dict[Path, str] = {}
"""The interpreter per source tree (``--python``); a tree not named runs with this one's."""


def _child(args: list[str], src: Path | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH")) if p)
    python = PYTHONS.get(src, sys.executable) if src is not None else sys.executable
    cmd = [python, str(Path(__file__).resolve()), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _prepare_source(scale: str, state: Path, src: Path | None, copy_from: Path | None) -> None:
    """Prepare ``state`` for one source: from scratch, or a copy of a prepared store.

    A copy holds another source's snapshot, so this source's first start
    builds its own (from the copied cards and vector blocks); that build is
    made here, untimed, so every measured start below is a restart.
    """
    import shutil

    if copy_from is None:
        _child(["--prepare", scale, "--state-dir", str(state)], src)
        return
    shutil.copytree(copy_from, state, symlinks=True)
    _child(["--resign", "--state-dir", str(state)], src)
    _child(["--child", scale, "--state-dir", str(state), "--queries", "3", "--methods", ""], src)


def _restarts(
    scale: str, root: Path, sources: dict[str, Path | None], runs: int
) -> list[dict[str, Any]]:
    """Per source: start-up after one changed card, and after one added server (medians)."""
    rows = []
    for what in CHANGES:
        measured: dict[str, list[dict[str, Any]]] = {name: [] for name in sources}
        for run in range(runs):
            for name, src in sources.items():
                state = root / name / scale
                print(
                    f"[{name}] {scale}: one {what} changed, run {run + 1}/{runs} …", file=sys.stderr
                )
                _child(["--change", what, "--run", str(run + 1), "--state-dir", str(state)], src)
                args = ["--child", scale, "--state-dir", str(state), "--queries", "3"]
                measured[name].append(_child([*args, "--methods", ""], src))
        for name, runs_of in measured.items():
            rows.append(
                {
                    "source": name,
                    "step": "one card changed" if what == "card" else "one server added",
                    "runs": len(runs_of),
                    **_median_row(runs_of),
                }
            )
    return rows


def run_all(
    scales: list[str],
    root: Path,
    queries: int,
    methods: str,
    sources: dict[str, Path | None],
    runs: int = 1,
    agreement: bool = True,
    restarts: bool = False,
    copy_from: Path | None = None,
) -> dict[str, Any]:
    rows = []
    for scale in scales:
        for name, src in sources.items():
            # Each source prepares its own store: card text may differ between versions.
            state = root / name / scale
            if (state / PREPARED).exists():
                print(f"[{name}] reusing the prepared {scale} store", file=sys.stderr)
                continue
            print(f"[{name}] preparing {scale} …", file=sys.stderr)
            _prepare_source(scale, state, src, copy_from / scale if copy_from else None)
            (state / PREPARED).write_text("prepared\n", encoding="utf-8")
        measured: dict[str, list[dict[str, Any]]] = {name: [] for name in sources}
        for run in range(runs):
            for name, src in sources.items():
                print(f"[{name}] measuring {scale}, run {run + 1}/{runs} …", file=sys.stderr)
                state = root / name / scale
                args = ["--child", scale, "--state-dir", str(state), "--queries", str(queries)]
                args += [] if agreement else ["--no-agreement"]
                measured[name].append(_child([*args, "--methods", methods], src))
        for name, runs_of in measured.items():
            rows.append(
                {"source": name, "step": "restart", "runs": len(runs_of), **_median_row(runs_of)}
            )
        if restarts:
            rows.extend(_restarts(scale, root, sources, runs))
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in load], "rows": rows}


PREPARED = ".serving-scale-prepared"


def _median_row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Every number the median over runs (nested dicts too); other values from the first run."""
    first = runs[0]
    out: dict[str, Any] = {}
    for key, value in first.items():
        values = [r.get(key) for r in runs]
        if isinstance(value, dict):
            out[key] = _median_row([v for v in values if isinstance(v, dict)])
        elif isinstance(value, int | float) and not isinstance(value, bool):
            numbers = [v for v in values if isinstance(v, int | float)]
            out[key] = round(statistics.median(numbers), 2)
        else:
            out[key] = value
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"(cpus {result['cpus']}, load average {result['loadavg']}; targets {TARGETS})",
        "",
        "| source | scale | step | tools | runs | verify s | load s | index s | start-up s "
        "| start-up CPU s | embedded | peak RSS MB | method | p50 ms | p99 ms | CPU p50 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        head = (
            f"| {row['source']} | {row['scale']} | {row.get('step', '')} | {row['tools']} "
            f"| {row['runs']} | {row['verify_s']} | {row['load_s']} | {row['index_build_s']} "
            f"| {row['startup_s']} | {row.get('startup_cpu_s', '')} | {row['embedded_now']} "
            f"| {row['peak_rss_mb']}"
        )
        if not row["methods"]:
            lines.append(f"{head} | | | | |")
        for method, t in row["methods"].items():
            lines.append(f"{head} | {method} | {t['p50_ms']} | {t['p99_ms']} | {t['cpu_p50_ms']} |")
        if row.get("rank_cpu_p50_ms") is not None:
            lines.append(
                f"| {row['source']} | {row['scale']} | ranking alone (answered cards read), "
                f"CPU p50 {row['rank_cpu_p50_ms']} ms |"
            )
        if row.get("agreement"):
            lines.append(
                f"| {row['source']} | {row['scale']} | prefilter vs exact: {row['agreement']} |"
            )
    return "\n".join(lines)


def main() -> int:
    from discover_latency import add_scale_options

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_scale_options(parser)
    parser.add_argument("--runs", type=int, default=1, help="measured runs per source (medians)")
    add_tree_options(parser)
    parser.add_argument("--state-dir", type=Path, help="where stores and caches go (default: temp)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument(
        "--no-agreement",
        action="store_true",
        help="skip the prefilter-vs-exact comparison (100k: one exact ranking per task)",
    )
    parser.add_argument(
        "--restarts",
        action="store_true",
        help="also measure start-up after one changed card and after one added server",
    )
    parser.add_argument(
        "--copy-prepared",
        type=Path,
        help="a --state-dir root whose first source's stores every source copies (saves preparing)",
    )
    parser.add_argument("--change", choices=CHANGES, help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    parser.add_argument("--resign", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.resign:
        print(json.dumps(resign(args.state_dir)))
        return 0
    if args.change:
        print(json.dumps(change(args.state_dir, args.change, args.run)))
        return 0
    if args.child:
        methods = [m for m in args.methods.split(",") if m]
        agreement = not args.no_agreement
        print(json.dumps(measure(args.child, args.state_dir, args.queries, methods, agreement)))
        return 0
    if args.prepare:
        print(json.dumps(prepare(args.prepare, args.state_dir)))
        return 0
    sources = sources_or_bare(args.src) or {"current": None}
    PYTHONS.update(interpreters_from(args.python, sources))
    with tempfile.TemporaryDirectory(prefix="cartograph-serve-") as tmp:
        root = args.state_dir or Path(tmp)
        result = run_all(
            args.scales.split(","),
            root,
            args.queries,
            args.methods,
            sources,
            args.runs,
            agreement=not args.no_agreement,
            restarts=args.restarts,
            copy_from=args.copy_prepared,
        )
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
