"""Cross-validate the hybrid ranker's parameters on a catalog + queries.

    python benchmarks/tune_hybrid.py [--catalog F] [--queries F] [--raw] [--folds 5] [--json]

Prints the full-data optimum (what ``HybridParams`` defaults should be), its
in-sample metrics and the held-out (out-of-fold) metrics of choosing the
parameters on the other folds — the numbers to quote.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cartograph.cards.attest import attest_in_memory
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import load_queries
from cartograph.eval.raw import raw_entries
from cartograph.eval.tune import cross_validate
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex

BENCH = Path(
    os.environ.get(
        "CARTOGRAPH_BENCH_DIR", Path(__file__).resolve().parents[1].parent / "shared" / "bench"
    )
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, default=BENCH / "livemcpbench" / "catalog.json")
    parser.add_argument("--queries", type=Path, default=BENCH / "livemcpbench" / "queries.jsonl")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument(
        "--raw", action="store_true", help="publisher text instead of template cards"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    catalog = load_catalog(args.catalog)
    model = get_embedder(args.embedder)
    if args.raw:
        index = ToolIndex.from_entries(raw_entries(catalog), model)
    else:
        index = ToolIndex.build(attest_in_memory(catalog), model)
    report = cross_validate(index, load_queries(args.queries), folds=args.folds)
    if args.json:
        json.dump(report.model_dump(), sys.stdout, indent=2)
        print()
        return
    print(f"grid {report.grid_size} points, {report.folds}-fold CV")
    print(f"best (full data): {report.best}")
    print(f"in-sample:  {report.in_sample}")
    print(f"held-out:   {report.held_out}")
    for i, choice in enumerate(report.fold_choices):
        print(f"  fold {i}: {choice}")


if __name__ == "__main__":
    main()
