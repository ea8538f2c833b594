"""Choose the learning parameters on licence-clean data (MetaTool), prequentially.

    python benchmarks/tune_learning.py [--catalog F] [--queries F] [--limit 4000] [--json]

The zero-shot pass (embedding and ranking every query in the seeded order)
runs once; each parameter setting then replays the learner over it with
*surfaced* feedback at 20 % noise. Prints every setting's R@5, Hit@5, MRR
and the best by their sum — what ``LearningConfig``'s defaults should be.
Never run it on the evaluation set (``bench/livemcpbench``): the defaults
are then measured there, out of sample.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
from pathlib import Path

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import load_queries
from cartograph.eval.learning import replay, zero_shot_pass
from cartograph.index.cache import EmbeddingCache
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex
from cartograph.learning.learner import LearningParams

TRAIN = Path(
    os.environ.get(
        "CARTOGRAPH_TRAIN_DIR", Path(__file__).resolve().parents[1].parent / "shared" / "train"
    )
)
GRID = {
    "min_similarity": (0.4, 0.5, 0.6, 0.7),
    "neighbours": (5, 10, 20),
    "vote_weight": (0.5, 1.0, 2.0, 4.0),
    "text_weight": (0.0, 0.3, 0.6),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, default=TRAIN / "metatool" / "catalog.json")
    parser.add_argument("--queries", type=Path, default=TRAIN / "metatool" / "queries.jsonl")
    parser.add_argument("--limit", type=int, default=4000, help="queries sampled (seed 0)")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache folder")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    queries = load_queries(args.queries)
    random.Random(0).shuffle(queries)
    queries = queries[: args.limit]
    cache = EmbeddingCache(args.cache) if args.cache else None
    index = ToolIndex.build(
        attest_with_unsafe_throwaway_key(load_catalog(args.catalog)),
        get_embedder(args.embedder),
        cache=cache,
    )
    print(f"zero-shot pass over {len(queries)} queries…", file=sys.stderr)
    run = zero_shot_pass(index, queries)
    results = []
    for values in itertools.product(*GRID.values()):
        setting = dict(zip(GRID, values, strict=True))
        params = LearningParams(capacity=len(queries), **setting)  # type: ignore[arg-type]
        row = replay(run, params=params, modes=("surfaced",)).rows["surfaced"]
        metrics = {name: row[name].mean for name in ("R@5", "Hit@5", "MRR")}
        results.append({"params": setting, **metrics, "sum": round(sum(metrics.values()), 4)})
        print(json.dumps(results[-1]), file=sys.stderr)
    zero = replay(run, modes=()).rows["zero-shot"]
    best = max(results, key=lambda r: r["sum"])
    summary = {
        "queries": len(queries),
        "zero_shot": {name: zero[name].mean for name in ("R@5", "Hit@5", "MRR")},
        "best": best,
        "grid": results,
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    print(f"zero-shot: {summary['zero_shot']}")
    print(f"best (surfaced, 20 % noise): {best}")


if __name__ == "__main__":
    main()
