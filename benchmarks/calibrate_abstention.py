"""Calibrate discover's abstention on single-step, multi-step and out-of-catalog tasks.

    python benchmarks/calibrate_abstention.py [--max-false 0.02] [--folds 5] [--json]

Servable sets: the demo federation's single-step tasks (``benchmarks/data/demo``)
and LiveMCPBench's multi-step tasks (``$CARTOGRAPH_BENCH_DIR``); out of catalog:
the demo set's tasks that no demo tool can do; and each servable set with its
gold servers removed. Template cards, the chosen embedder (default: the shipped
MiniLM). Two rules, side by side:

- *cosine*: abstain when the best raw cosine is below a threshold
  (``DEFAULT_ABSTAIN_THRESHOLD``; the rule for models without a delta);
- *open world*: abstain when a background tool fits the task better than every
  tool of ours by ``delta`` (``cartograph.index.open_world``).

These sets include evaluation sets, so what this prints describes, it does not
ship: the shipped pair is fitted on the training sets alone
(``abstention_tradeoff.py``).

For each: the parameter fitted on everything (in-sample rates) and the rates of
``--folds``-fold cross-validation (each fold's parameter fitted on the others).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.calibrate import (
    CalibrationSet,
    RuleSets,
    cosine_rule,
    cross_validate,
    fit_rule,
    open_world_rule,
)
from cartograph.eval.data import load_queries
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("CARTOGRAPH_BENCH_DIR", ROOT.parent / "shared" / "bench"))
DEMO = ROOT / "benchmarks" / "data" / "demo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-false", type=float, default=0.02)
    parser.add_argument("--folds", type=int, default=5)
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
    servable = [
        CalibrationSet("demo-single-step", demo, load_queries(DEMO / "single_step.jsonl")),
        CalibrationSet("livemcpbench", live, load_queries(live_dir / "queries.jsonl")),
    ]
    ooc = [CalibrationSet("demo-out-of-catalog", demo, load_queries(DEMO / "out_of_catalog.jsonl"))]
    rules = {"cosine": cosine_rule(servable, ooc), "open world": open_world_rule(servable, ooc)}
    out = {name: _measure(rule, args.max_false, args.folds) for name, rule in rules.items()}
    if args.json:
        json.dump({"model_id": model.model_id, "rules": out}, sys.stdout, indent=2)
        print()
        return
    print(f"{model.model_id}: at most {args.max_false:.0%} false abstentions per servable set")
    for name, found in out.items():
        print(f"{name}: parameter {found['param']} (fold parameters {found['fold_params']})")
        for set_name in found["in_sample"]:
            print(
                f"  {set_name:40s} in-sample {found['in_sample'][set_name]:6.1%}"
                f"   held-out {found['held_out'][set_name]:6.1%}"
            )


def _measure(rule: RuleSets, max_false: float, folds: int) -> dict[str, object]:
    fitted = fit_rule(rule, max_false)
    params, held = cross_validate(rule, folds=folds, max_false_abstain=max_false)
    return {
        "param": round(fitted.param, 4),
        "in_sample": fitted.rates,
        "fold_params": [round(p, 4) for p in params],
        "held_out": held,
    }


if __name__ == "__main__":
    main()
