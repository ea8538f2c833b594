"""The generalisation protocol: shipped discover on every evaluation set, paired with a baseline.

    python benchmarks/generalisation.py [--src BASELINE_SRC] [--sets a,b,...] [--json]

Runs ``discover`` as it ships (template cards, the default ranker, the shipped
abstention rule) over every set the project can see and prints, per set and
metric, the working tree's figure, the baseline's (``--src``: the ``src/`` of
another checkout, e.g. ``git worktree add ../cartograph-base 31dec07`` then
``--src ../cartograph-base/src``) and their paired difference with a 95 % bootstrap
interval over the set's queries. **A default changes only when no set gets
worse beyond its interval** (docs/retrieval.md, "The generalisation protocol").

Sets (evaluation only; nothing is fitted here):

- ``livemcpbench``: LiveMCPBench, multi-step tasks over 527 MCP tools;
- ``bfcl``: the BFCL evaluation half, one-intent requests over sibling functions;
- ``demo``: the demo federation's single-step tasks;
- ``demo-ooc``: the demo's out-of-catalog tasks (only abstention is measured);
- ``metatool-heldout``: MetaTool's queries for the fifth of its tools that
  nothing shipped is fitted on (``train_sets.metatool_held_out``; 600 of them,
  seeded), ranked against all 199 tools: single-intent, whole-product matching.

Per answerable set: Hit@1, Hit@5, MRR (depth 100) and the false-abstention
rate; per out-of-catalog set: the true-abstention rate. Each tree runs in its
own child process (``--worker``) with that tree's ``src`` first on the path,
in the same environment, so the comparison is the code and nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("CARTOGRAPH_BENCH_DIR", ROOT.parent / "shared" / "bench"))
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))
HELD_OUT_SAMPLE = 600
DEMO = ROOT / "benchmarks" / "data" / "demo"
DEPTH = 100
SETS: dict[str, tuple[Path, Path]] = {
    "livemcpbench": (
        BENCH / "livemcpbench" / "catalog.json",
        BENCH / "livemcpbench" / "queries.jsonl",
    ),
    "bfcl": (BENCH / "bfcl" / "catalog.json", BENCH / "bfcl" / "queries.jsonl"),
    "demo": (DEMO / "catalog.json", DEMO / "single_step.jsonl"),
    "demo-ooc": (DEMO / "catalog.json", DEMO / "out_of_catalog.jsonl"),
    "metatool-heldout": (TRAIN / "metatool" / "catalog.json", TRAIN / "metatool" / "queries.jsonl"),
}


def set_queries(name: str, path: Path) -> list[Any]:
    """The set's queries; for ``metatool-heldout`` only the held-out tools' (a seeded sample)."""
    from cartograph.eval.data import load_queries

    queries = load_queries(path)
    if name != "metatool-heldout":
        return queries
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from train_sets import metatool_held_out

    held = [q for q in queries if metatool_held_out(q.gold[0].tool)]
    return random.Random(0).sample(held, min(HELD_OUT_SAMPLE, len(held)))


def worker(names: list[str]) -> None:
    """In the tree under test: per query, the first gold rank (or None) and whether it abstained."""
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.index.discover import discover
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    embedder = get_embedder("minilm")
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        catalog, queries = SETS[name]
        cards = attest_with_unsafe_throwaway_key(load_catalog(catalog))
        index = ToolIndex.build(cards, embedder)
        rows = []
        for query in set_queries(name, queries):
            result = discover(index, cards, query.query, k=DEPTH)
            ranked = [(t.server, t.tool) for t in result.tools]
            if result.abstained:  # an abstention shows a few tools: rank again in full
                ctx = index.context(query.query)
                ranked = [index.corpus.key(i) for i, _ in index.rank(ctx, DEPTH)]
            gold = {(g.server, g.tool) for g in query.gold}
            rank = next((i + 1 for i, key in enumerate(ranked) if tuple(key) in gold), None)
            rows.append({"id": query.id, "rank": rank, "abstained": result.abstained})
        out[name] = rows
        print(f"generalisation: {name}: {len(rows)} queries", file=sys.stderr)
    json.dump(out, sys.stdout)


def run_tree(src: Path, names: list[str]) -> dict[str, list[dict[str, Any]]]:
    # One hash seed for every tree: a tree whose output depends on set order
    # (9a36ba2 and before: card tags) is then compared with itself run the same way.
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--sets", ",".join(names)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"generalisation: the tree at {src} failed:\n{done.stderr[-4000:]}")
    result: dict[str, list[dict[str, Any]]] = json.loads(done.stdout)
    return result


def per_query(rows: list[dict[str, Any]], metric: str) -> list[float]:
    def value(row: dict[str, Any]) -> float:
        rank = row["rank"]
        if metric == "abstained":
            return 1.0 if row["abstained"] else 0.0
        if rank is None:
            return 0.0
        if metric == "MRR":
            return 1.0 / rank
        return 1.0 if rank <= int(metric.split("@")[1]) else 0.0

    return [value(row) for row in rows]


def paired(new: list[float], old: list[float], samples: int, seed: int) -> dict[str, float]:
    """Mean of each, their difference and its 95 % percentile bootstrap interval (paired)."""
    n = len(new)
    diffs = [a - b for a, b in zip(new, old, strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    return {
        "new": sum(new) / n,
        "old": sum(old) / n,
        "diff": sum(diffs) / n,
        "low": means[int(0.025 * samples)],
        "high": means[min(samples - 1, int(0.975 * samples))],
    }


def table(
    new: dict[str, list[dict[str, Any]]],
    old: dict[str, list[dict[str, Any]]],
    samples: int,
) -> list[dict[str, Any]]:
    lines = []
    for name, rows in new.items():
        base = {row["id"]: row for row in old[name]}
        paired_old = [base[row["id"]] for row in rows]
        ooc = name.endswith("-ooc")
        metrics = ["abstained"] if ooc else ["Hit@1", "Hit@5", "MRR", "abstained"]
        for metric in metrics:
            stats = paired(per_query(rows, metric), per_query(paired_old, metric), samples, 0)
            # Abstaining is right out of catalog and wrong on answerable tasks.
            better_is_higher = ooc or metric != "abstained"
            worse = stats["high"] < 0 if better_is_higher else stats["low"] > 0
            better = stats["low"] > 0 if better_is_higher else stats["high"] < 0
            label = {"abstained": "true abstention" if ooc else "false abstention"}.get(
                metric, metric
            )
            verdict = "worse" if worse else "better" if better else "same"
            row = {"set": name, "n": len(rows), "metric": label, **stats, "verdict": verdict}
            lines.append(row)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--src", type=Path, help="baseline tree's src/ (default: this tree)")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated set names")
    parser.add_argument("--samples", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = [n for n in args.sets.split(",") if n]
    unknown = [n for n in names if n not in SETS]
    if unknown:
        raise SystemExit(f"generalisation: unknown set(s) {unknown}; known: {sorted(SETS)}")
    if args.worker:
        worker(names)
        return
    missing = [n for n in names if not all(p.is_file() for p in SETS[n])]
    if missing:
        raise SystemExit(f"generalisation: data missing for {missing} (CARTOGRAPH_BENCH_DIR?)")
    new = run_tree(ROOT / "src", names)
    old = run_tree(args.src, names) if args.src else new
    lines = table(new, old, args.samples)
    if args.json:
        print(json.dumps({"baseline": str(args.src or "this tree"), "rows": lines}, indent=2))
        return
    print(f"{'set':<16} {'n':>4}  {'metric':<17} {'base':>6} {'new':>6} {'diff':>7}  95 % interval")
    for line in lines:
        print(
            f"{line['set']:<16} {line['n']:>4}  {line['metric']:<17} {line['old']:6.3f} "
            f"{line['new']:6.3f} {line['diff']:+7.3f}  [{line['low']:+.3f}, {line['high']:+.3f}]"
            f"  {line['verdict']}"
        )


if __name__ == "__main__":
    main()
