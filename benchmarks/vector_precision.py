#!/usr/bin/env python3
"""Does storing tool vectors as float16 cost retrieval quality? LiveMCPBench, zero-shot.

    python benchmarks/vector_precision.py [--bench ../shared/bench/livemcpbench] [--json]

Builds the index over template cards of the LiveMCPBench catalog once (MiniLM,
through an embedding cache in a temporary folder), then evaluates every ranker
twice: with the float32 tool vectors, and with the same vectors rounded to
float16 and back (what the persisted index stores, ``index/vector_store.py``).
The persisted index stores float16 only if hybrid R@5 moves by at most 0.005.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BENCH = ROOT.parent / "shared" / "bench" / "livemcpbench"
METHODS = ("hybrid", "dense", "two-stage")


def run(bench: Path) -> dict[str, Any]:
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.eval.data import load_queries
    from cartograph.eval.harness import evaluate
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.corpus import server_centroids
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    cards = attest_with_unsafe_throwaway_key(load_catalog(bench / "catalog.json"))
    queries = load_queries(bench / "queries.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        index32 = ToolIndex.build(cards, get_embedder("minilm"), cache=EmbeddingCache(Path(tmp)))
    corpus = index32.corpus
    half = corpus.tool_vectors.astype(np.float16).astype(np.float32)
    corpus16 = replace(
        corpus,
        tool_vectors=half,
        centroids=server_centroids(half, corpus.tool_server, len(corpus.servers)),
    )
    index16 = ToolIndex(corpus16, default_method=index32.default_method)
    report = evaluate({"float32": index32, "float16": index16}, queries, list(METHODS))
    table: dict[str, dict[str, float]] = {}
    for row in report.rows:
        table.setdefault(row.method, {})[row.card_set] = row.metrics["R@5"].mean
    deltas = {m: round(v["float16"] - v["float32"], 4) for m, v in table.items()}
    return {"R@5": table, "delta_float16": deltas, "tools": report.tools, "queries": len(queries)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    result = run(options.bench)
    if options.json:
        print(json.dumps(result, indent=2))
    else:
        for method, values in result["R@5"].items():
            print(
                f"{method:10} R@5 float32 {values['float32']:.4f}  float16 {values['float16']:.4f}"
                f"  delta {result['delta_float16'][method]:+.4f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
