"""How far any threshold over discover's signals can take abstention: the ceiling, measured.

    python benchmarks/train_sets.py                  # once: the BFCL training half laid out
    python benchmarks/abstention_ceiling.py [--max-false 0.02] [--json]

Issue 22 asks for ≥ 80 % true abstention at ≤ 2 % false. ``abstention_tradeoff.py``
fits the shipped rules on training data and shows they miss it; this script
asks whether *any* rule over the same signals could meet it, so the closing
note can say what stands in the way instead of guessing. Per query it takes
four signals:

- ``cosine``: the best cosine of the task or a step to any tool (the shipped rule);
- ``open world``: the open-world margin (``index/open_world.py``);
- ``vs null``: the best cosine minus the catalog's own noise level, the 90th
  percentile of the best cosine that background tasks the catalog does not
  serve reach (bigger catalogs reach higher by chance; this removes that);
- ``gap``: best minus second-best tool cosine.

For each signal, and for a logistic combination of them fitted on the
training sets only (the BFCL training half's answerable against its irrelevance
questions, MetaTool's kept tools against a removed fifth), it prints:

- *oracle*: the most out-of-catalog tasks any threshold catches on the demo
  with at most ``--max-false`` of the demo's servable tasks abstained on, the
  threshold chosen on the demo itself. An upper bound, never a fit: if the
  oracle misses the target, no threshold on that signal can meet it.
- *fitted*: the threshold chosen on training data (the budget on each
  training set) applied to every evaluation set.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from abstention_tradeoff import BENCH, DEMO, TRAIN, metatool_sets

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import EvalQuery, load_queries
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex

Matrix = npt.NDArray[np.float64]
SIGNALS: Final = ("cosine", "open world", "vs null", "gap")
COMBINED: Final = "logistic (all four)"
NULL_PERCENTILE: Final = 90.0


def signals(index: ToolIndex, queries: Sequence[EvalQuery]) -> Matrix:
    """One row per query: :data:`SIGNALS`, higher meaning "more likely servable"."""
    world = index.open_world()
    background = world.background
    kept_tasks = world.kept()[background.owner]
    task_best = index.corpus.tool_similarities(background.tasks).max(axis=1)
    null = float(np.percentile(task_best[kept_tasks], NULL_PERCENTILE)) if kept_tasks.any() else 0.0
    rows = []
    for q in queries:
        ctx = index.context(q.query)
        sims = ctx.similarities()
        per_tool = np.sort(sims.max(axis=0))[::-1]
        best = float(per_tool[0])
        second = float(per_tool[1]) if len(per_tool) > 1 else best
        margin = world.margin(ctx.vectors(), sims.max(axis=1))
        rows.append([best, margin, best - null, best - second])
    return np.array(rows, dtype=np.float64)


def fit_logistic(x: Matrix, y: Matrix, weight: Matrix, l2: float = 1e-2) -> Matrix:
    """Weighted, L2-regularised logistic regression by Newton's method (bias last)."""
    design = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(design.shape[1])
    penalty = l2 * np.r_[np.ones(len(w) - 1), 0.0]
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-design @ w))
        grad = design.T @ ((p - y) * weight) / weight.sum() + penalty * w
        hess = (design * (p * (1 - p) * weight)[:, None]).T @ design / weight.sum()
        w = w - np.linalg.solve(hess + np.diag(penalty), grad)
    out: Matrix = w
    return out


def apply(w: Matrix, x: Matrix) -> Matrix:
    out: Matrix = np.hstack([x, np.ones((len(x), 1))]) @ w
    return out


def budget_threshold(scores: Matrix, budget: float) -> float:
    """The highest threshold with at most ``budget`` of ``scores`` below it."""
    return float(np.sort(scores)[int(np.floor(budget * len(scores)))])


def oracle(servable: Matrix, ooc: Matrix, budget: float) -> float:
    """The most of ``ooc`` any threshold catches within ``budget`` false on ``servable``."""
    return float(np.mean(ooc < budget_threshold(servable, budget)))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--max-false", type=float, default=0.02)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (TRAIN / "irrelevance.jsonl").is_file():
        raise SystemExit("abstention_ceiling: run benchmarks/train_sets.py first")
    model = get_embedder("minilm")

    def build(catalog: Path) -> ToolIndex:
        return ToolIndex.build(attest_with_unsafe_throwaway_key(load_catalog(catalog)), model)

    train = build(TRAIN / "catalog.json")
    servable_mt, ooc_mt = metatool_sets(model)
    demo = build(DEMO / "catalog.json")
    data = {
        "bfcl-train": signals(train, load_queries(TRAIN / "queries.jsonl")),
        "bfcl-train irrelevance": signals(train, load_queries(TRAIN / "irrelevance.jsonl")),
        "metatool-train": signals(servable_mt.index, servable_mt.queries),
        "metatool-train removed tools": signals(ooc_mt.index, ooc_mt.queries),
        "demo": signals(demo, load_queries(DEMO / "single_step.jsonl")),
        "demo-ooc": signals(demo, load_queries(DEMO / "out_of_catalog.jsonl")),
        "livemcpbench": signals(
            build(BENCH / "livemcpbench" / "catalog.json"),
            load_queries(BENCH / "livemcpbench" / "queries.jsonl"),
        ),
        "bfcl": signals(
            build(BENCH / "bfcl" / "catalog.json"), load_queries(BENCH / "bfcl" / "queries.jsonl")
        ),
    }
    report = ceiling(data, args.max_false)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"budget {args.max_false:.1%} false; oracle = best threshold chosen on the demo itself")
    for row in report["rows"]:
        fitted = ", ".join(f"{k} {v:.1%}" for k, v in row["fitted"].items())
        print(f"{row['signal']:<20} oracle demo-ooc {row['oracle']:.1%}  fitted: {fitted}")


TRAIN_PAIRS: Final = (
    ("bfcl-train", "bfcl-train irrelevance"),
    ("metatool-train", "metatool-train removed tools"),
)
MEASURED: Final = ("demo", "livemcpbench", "bfcl", "demo-ooc")


def ceiling(data: dict[str, Matrix], budget: float) -> dict[str, Any]:
    """Per signal and for their combination: the demo oracle and the training-fitted rule."""
    rows = []
    for column, name in enumerate(SIGNALS):
        scores = {k: v[:, column] for k, v in data.items()}
        rows.append(_row(name, scores, budget))
    x = np.vstack([data[s] for pair in TRAIN_PAIRS for s in pair])
    labelled = [(s, float(i == 0)) for pair in TRAIN_PAIRS for i, s in enumerate(pair)]
    y = np.concatenate([np.full(len(data[s]), label) for s, label in labelled])
    weight = np.concatenate([np.full(len(data[s]), 1.0 / len(data[s])) for s, _ in labelled])
    w = fit_logistic(x, y, weight)
    rows.append(_row(COMBINED, {k: apply(w, v) for k, v in data.items()}, budget))
    return {"max_false": budget, "logistic_weights": [round(float(v), 4) for v in w], "rows": rows}


def _row(name: str, scores: dict[str, Matrix], budget: float) -> dict[str, Any]:
    threshold = min(budget_threshold(scores[s], budget) for s, _ in TRAIN_PAIRS)
    return {
        "signal": name,
        "oracle": round(oracle(scores["demo"], scores["demo-ooc"], budget), 4),
        "fitted": {s: round(float(np.mean(scores[s] < threshold)), 4) for s in MEASURED},
    }


if __name__ == "__main__":
    main()
