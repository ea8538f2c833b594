"""Abstention fitted on training data, measured on every evaluation set.

    python benchmarks/train_sets.py                  # once: the BFCL training half laid out
    python benchmarks/abstention_tradeoff.py [--max-false 0.02] [--json]

Fits the rules of ``cartograph.eval.calibrate`` — the raw cosine threshold, the
open-world margin (``index/open_world.py``) and the pair of them (abstain when
either fires; what ships for a model with a calibrated delta) — on training data
only (false abstention at most ``--max-false`` on *each* answerable training set):

- the BFCL training half: its answerable questions over its own federation,
  against its irrelevance questions and its questions with the gold servers removed;
- MetaTool (``--fit-on bfcl,metatool``): 1,000 queries of its tools, everyday
  phrasings as users ask, against the queries of a fifth of its tools taken out of
  the catalog (``train_sets.metatool_ooc``; not the fifth the protocol holds out).

Then it applies each fitted parameter, and the shipped rule, to the evaluation
sets (demo single-step, LiveMCPBench, the BFCL evaluation half: false abstention;
the demo's out-of-catalog tasks: true abstention) and prints the trade-off.
Nothing here is fitted on an evaluation set.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from typing import Any, cast

import numpy as np

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.calibrate import (
    REMOVED,
    CalibrationSet,
    Param,
    RuleParam,
    RuleSets,
    cosine_rule,
    either_rule,
    fit_rule,
    open_world_rule,
)
from cartograph.eval.data import load_queries
from cartograph.index.discover import DEFAULT_ABSTAIN_THRESHOLD
from cartograph.index.embedders import get_embedder
from cartograph.index.embedders.base import Embedder
from cartograph.index.embedders.minilm.embedder import MINILM_MODEL_ID
from cartograph.index.open_world import calibrated_delta
from cartograph.index.tool_index import ToolIndex

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("CARTOGRAPH_BENCH_DIR", ROOT.parent / "shared" / "bench"))
DEMO = ROOT / "benchmarks" / "data" / "demo"
TRAIN = ROOT / "benchmarks" / "results" / "train" / "bfcl"
SHARED_TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))
METATOOL = SHARED_TRAIN / "metatool"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--max-false", type=float, default=0.02)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--fit-on", default="bfcl,metatool", help="bfcl, metatool or both")
    args = parser.parse_args()
    if not (TRAIN / "irrelevance.jsonl").is_file():
        raise SystemExit("abstention_tradeoff: run benchmarks/train_sets.py first")
    model = get_embedder("minilm")

    def index(catalog: Path) -> ToolIndex:
        return ToolIndex.build(attest_with_unsafe_throwaway_key(load_catalog(catalog)), model)

    fit_on: tuple[list[CalibrationSet], list[CalibrationSet]] = ([], [])
    if "bfcl" in args.fit_on:
        train = index(TRAIN / "catalog.json")
        fit_on[0].append(CalibrationSet("bfcl-train", train, load_queries(TRAIN / "queries.jsonl")))
        fit_on[1].append(
            CalibrationSet(
                "bfcl-train irrelevance", train, load_queries(TRAIN / "irrelevance.jsonl")
            )
        )
    if "metatool" in args.fit_on:
        servable, ooc = metatool_sets(model)
        fit_on[0].append(servable)
        fit_on[1].append(ooc)
    demo = index(DEMO / "catalog.json")
    measure_on = (
        [
            CalibrationSet("demo", demo, load_queries(DEMO / "single_step.jsonl")),
            CalibrationSet(
                "livemcpbench",
                index(BENCH / "livemcpbench" / "catalog.json"),
                load_queries(BENCH / "livemcpbench" / "queries.jsonl"),
            ),
            CalibrationSet(
                "bfcl",
                index(BENCH / "bfcl" / "catalog.json"),
                load_queries(BENCH / "bfcl" / "queries.jsonl"),
            ),
        ],
        [CalibrationSet("demo-ooc", demo, load_queries(DEMO / "out_of_catalog.jsonl"))],
    )
    cosine = (cosine_rule(*fit_on), cosine_rule(*measure_on))
    world = (open_world_rule(*fit_on), open_world_rule(*measure_on))
    either = (either_rule(cosine[0], world[0]), either_rule(cosine[1], world[1]))
    rows: list[dict[str, Any]] = [
        _fitted_row("cosine", args.fit_on, *cosine, args.max_false),
        _fitted_row("open world", args.fit_on, *world, args.max_false),
        _fitted_row("cosine or open world", args.fit_on, *either, args.max_false),
    ]
    delta = calibrated_delta(MINILM_MODEL_ID)
    shipped: tuple[str, RuleParam, dict[str, float]] = (
        ("cosine", DEFAULT_ABSTAIN_THRESHOLD, _rates(cosine[1], DEFAULT_ABSTAIN_THRESHOLD))
        if delta is None
        else (
            "cosine or open world",
            (DEFAULT_ABSTAIN_THRESHOLD, delta),
            _rates(either[1], (DEFAULT_ABSTAIN_THRESHOLD, delta)),
        )
    )
    rows.append(
        {
            "rule": shipped[0],
            "fitted on": "shipped",
            "param": shipped[1],
            "train": {},
            "eval": shipped[2],
        }
    )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        evals = ", ".join(f"{k} {v:.1%}" for k, v in row["eval"].items())
        param = ", ".join(str(p) for p in np.atleast_1d(row["param"]))
        print(f"{row['rule']:<20} {row['fitted on']:<14} {param:>16}  {evals}")


def _fitted_row(
    name: str,
    fit_on: str,
    train: RuleSets[Param],
    measured: RuleSets[Param],
    max_false: float,
) -> dict[str, Any]:
    """The rule fitted on the training sets and applied, unchanged, to the evaluation sets."""
    fitted = fit_rule(train, max_false)
    param = cast(Param, fitted.param)
    return {
        "rule": name,
        "fitted on": fit_on,
        "param": param,
        "train": fitted.rates,
        "eval": _rates(measured, param),
    }


def metatool_sets(model: Embedder) -> tuple[CalibrationSet, CalibrationSet]:
    """MetaTool as abstention training data: kept tools' queries, and a removed fifth's."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from train_sets import metatool_held_out, metatool_ooc

    catalog = load_catalog(METATOOL / "catalog.json")
    kept = catalog.model_copy(
        update={
            "servers": [
                s.model_copy(update={"tools": [t for t in s.tools if not metatool_ooc(t.name)]})
                for s in catalog.servers
            ]
        }
    )
    index = ToolIndex.build(attest_with_unsafe_throwaway_key(kept), model)
    rng = random.Random(0)
    queries = load_queries(METATOOL / "queries.jsonl")
    fitted = [q for q in queries if not metatool_held_out(q.gold[0].tool)]
    answerable = [q for q in fitted if not metatool_ooc(q.gold[0].tool)]
    removed = [q.model_copy(update={"gold": []}) for q in fitted if metatool_ooc(q.gold[0].tool)]
    return (
        CalibrationSet("metatool-train", index, rng.sample(answerable, 1000)),
        CalibrationSet("metatool-train removed tools", index, rng.sample(removed, 500)),
    )


def _rates(rule: RuleSets[Param], param: Param) -> dict[str, float]:
    decided = rule.decide(param)
    return {k: round(float(v.mean()), 4) for k, v in decided.items() if REMOVED not in k}


if __name__ == "__main__":
    main()
