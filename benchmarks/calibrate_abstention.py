"""Calibrate discover's abstention threshold on single-step, multi-step and out-of-catalog tasks.

    python benchmarks/calibrate_abstention.py [--max-false 0.02] [--json]

Servable sets: the demo federation's single-step tasks (``benchmarks/data/demo``)
and LiveMCPBench's multi-step tasks (``$CARTOGRAPH_BENCH_DIR``); out of catalog:
the demo set's tasks that no demo tool can do. Template cards, the shipped
MiniLM. Prints the threshold (``DEFAULT_ABSTAIN_THRESHOLD`` should be it) and
the false/true abstention rates per set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.calibrate import CalibrationSet, calibrate_on_sets
from cartograph.eval.data import load_queries
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("CARTOGRAPH_BENCH_DIR", ROOT.parent / "shared" / "bench"))
DEMO = ROOT / "benchmarks" / "data" / "demo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-false", type=float, default=0.02)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    model = get_embedder(args.embedder)
    demo = ToolIndex.build(
        attest_with_unsafe_throwaway_key(load_catalog(DEMO / "catalog.json")), model
    )
    live_dir = BENCH / "livemcpbench"
    live = ToolIndex.build(
        attest_with_unsafe_throwaway_key(load_catalog(live_dir / "catalog.json")), model
    )
    report = calibrate_on_sets(
        [
            CalibrationSet("demo-single-step", demo, load_queries(DEMO / "single_step.jsonl")),
            CalibrationSet("livemcpbench", live, load_queries(live_dir / "queries.jsonl")),
        ],
        [CalibrationSet("demo-out-of-catalog", demo, load_queries(DEMO / "out_of_catalog.jsonl"))],
        max_false_abstain=args.max_false,
    )
    if args.json:
        json.dump(report.model_dump(), sys.stdout, indent=2)
        print()
        return
    print(
        f"threshold {report.threshold} (at most {report.max_false_abstain:.0%} false abstentions)"
    )
    for name, rate in report.false_abstain.items():
        print(f"  false abstention, {name}: {rate:.1%}")
    for name, rate in report.true_abstain.items():
        print(f"  true abstention, {name}: {rate:.1%}")
    for name, rate in report.synthetic_true_abstain.items():
        print(f"  true abstention, {name} with its gold servers removed: {rate:.1%}")


if __name__ == "__main__":
    main()
