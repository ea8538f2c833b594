"""Cross-validate the hybrid ranker's parameters on one or more query sets together.

    python benchmarks/tune_hybrid.py [--set NAME=CATALOG,QUERIES ...] [--raw] [--folds 5] [--json]

Default sets: LiveMCPBench (multi-step, ``$CARTOGRAPH_BENCH_DIR``) and the demo
federation's single-step set (``benchmarks/data/demo``). Each set counts
equally in the objective (the sum of each set's mean R@5 + Hit@5 + MRR).
Prints the full-data optimum (what ``HybridParams`` defaults should be), its
in-sample metrics and the held-out (out-of-fold) metrics of choosing the
parameters on the other folds, pooled and per set — the numbers to quote.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import load_queries
from cartograph.eval.raw import raw_entries
from cartograph.eval.tune import TuneSet, cross_validate_sets
from cartograph.index.embedders import get_embedder
from cartograph.index.embedders.base import Embedder
from cartograph.index.tool_index import ToolIndex

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("CARTOGRAPH_BENCH_DIR", ROOT.parent / "shared" / "bench"))
DEMO = ROOT / "benchmarks" / "data" / "demo"
DEFAULT_SETS = (
    f"livemcpbench={BENCH / 'livemcpbench' / 'catalog.json'},"
    f"{BENCH / 'livemcpbench' / 'queries.jsonl'}",
    f"demo-single-step={DEMO / 'catalog.json'},{DEMO / 'single_step.jsonl'}",
)


def tune_set(spec: str, model: Embedder, *, raw: bool) -> TuneSet:
    """``NAME=CATALOG,QUERIES`` as a :class:`TuneSet` over template cards (or raw text)."""
    name, _, paths = spec.partition("=")
    catalog_path, _, queries_path = paths.partition(",")
    catalog = load_catalog(Path(catalog_path))
    if raw:
        index = ToolIndex.from_entries(raw_entries(catalog), model)
    else:
        index = ToolIndex.build(attest_with_unsafe_throwaway_key(catalog), model)
    return TuneSet(name, index, load_queries(Path(queries_path)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", dest="sets", help="NAME=CATALOG,QUERIES")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument(
        "--raw", action="store_true", help="publisher text instead of template cards"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    model = get_embedder(args.embedder)
    sets = [tune_set(spec, model, raw=args.raw) for spec in args.sets or DEFAULT_SETS]
    report = cross_validate_sets(sets, folds=args.folds)
    if args.json:
        json.dump(report.model_dump(), sys.stdout, indent=2)
        print()
        return
    print(f"grid {report.grid_size} points, {report.folds}-fold CV over {len(sets)} sets")
    print(f"best (full data): {report.best}")
    print(f"in-sample:  {report.in_sample}")
    print(f"held-out:   {report.held_out}")
    for name, metrics in report.per_set.items():
        print(f"  held-out {name}: {metrics}")
    for i, choice in enumerate(report.fold_choices):
        print(f"  fold {i}: {choice}")


if __name__ == "__main__":
    main()
