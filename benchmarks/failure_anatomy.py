"""Which signal put the wrong tool first: the hybrid's failure anatomy on a query set.

    python benchmarks/failure_anatomy.py [--catalog F --queries F] [--embedder minilm] [--json]

Default: the demo federation's single-step set (``benchmarks/data/demo``).
Per task whose first tool is not gold: the winner, whether it is a sibling on
the gold tool's server, the rank the lexical and the dense signal alone give
the gold tool and the winner, and the cause (``cartograph.eval.anatomy``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.anatomy import failure_anatomy
from cartograph.eval.data import load_queries
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex

DEMO = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "demo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, default=DEMO / "catalog.json")
    parser.add_argument("--queries", type=Path, default=DEMO / "single_step.jsonl")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    index = ToolIndex.build(
        attest_with_unsafe_throwaway_key(load_catalog(args.catalog)), get_embedder(args.embedder)
    )
    report = failure_anatomy(index, load_queries(args.queries))
    if args.json:
        json.dump(report.model_dump(), sys.stdout, indent=2)
        print()
        return
    print(
        f"{report.queries} tasks: right tool first {report.first}, sibling first "
        f"{report.sibling_first}, another server's tool first with gold in the top 5 "
        f"{report.other_server_first_gold_in_top5}, gold not in the top 5 {report.gold_not_in_top5}"
    )
    for cause, count in report.causes.items():
        print(f"  {cause}: {count}")
    print("misses (gold rank; lexical/dense rank of gold vs winner):")
    for m in report.misses:
        print(
            f"  {m.id} [{m.gold_rank}] {m.query}\n"
            f"      gold {m.gold} lex {m.gold_lexical_rank} dense {m.gold_dense_rank} | "
            f"winner {m.winner} lex {m.winner_lexical_rank} dense {m.winner_dense_rank} | {m.cause}"
        )


if __name__ == "__main__":
    main()
