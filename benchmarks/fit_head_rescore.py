"""Fit the hybrid's head re-scoring on the training sets only, and write its data file.

    python benchmarks/fit_head_rescore.py [--features fused,name] [--out FILE] [--json]

Writes ``src/cartograph/index/rankers/head_rescore.json``, the weights
:mod:`cartograph.index.rankers.contrast` ships with (``--out`` elsewhere to
try other features without touching it). The data are the BFCL training
half laid out as a federation (``benchmarks/train_sets.py``; every question's
own candidates are its hard negatives) and a seeded sample of MetaTool's
queries for its training tools (``train_sets.metatool_held_out`` excluded).
Nothing here reads an evaluation set.

Per query, the hybrid ranks with the head re-scoring off; for its best
``head`` tools four features are kept — the fused score, the raw cosine of
the task to the tool, the head contrast cos(q − m, t − m) and the name share
— and a conditional logit (softmax over the head, the right tools as the
target, L2 on the added weights) is fitted over the ``--features`` asked for
(the shipped file: fused and name; the others are measured and written as 0).
The head size and L2 strength are chosen by 5-fold cross-validation over
queries of both sets at once (the mean of each set's out-of-fold Hit@1); the
script also reports each set fitted alone and scored on the other (whether
the fit transfers across kinds of data). The weights written are those of
the chosen setting fitted on all the data, divided by the fused score's
weight so the score keeps the hybrid's scale.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))
OUT = ROOT / "src" / "cartograph" / "index" / "rankers" / "head_rescore.json"
HEADS = (3, 5, 10)
L2 = (1e-3, 1e-2)
FOLDS = 5
METATOOL_SAMPLE = 2000
SEED = 1

Array = npt.NDArray[np.float64]


@dataclass
class Query:
    """One training query's head: fused scores, tool vectors, task vector, which are right."""

    scores: Array
    rows: Array
    task: Array
    shares: Array
    right: npt.NDArray[np.bool_]


FEATURES = ("fused", "dense", "contrast", "name")


def head_features(q: Query, head: int) -> Array:
    """head × 4: fused score, raw cosine, head contrast and the negated name share.

    Each as :func:`cartograph.index.rankers.contrast.rescore_head` adds it, so
    a fitted weight divided by the fused score's is the weight that ships.
    """
    from cartograph.index.rankers.contrast import head_contrast

    scores, rows = q.scores[:head], q.rows[:head]
    cosines = rows @ q.task
    return np.stack(
        [
            scores - scores.max(),
            cosines - cosines.max(),
            head_contrast(q.task, rows),
            -q.shares[:head],
        ],
        axis=1,
    )


def fit(xs: list[Array], ys: list[npt.NDArray[np.bool_]], l2: float) -> Array:
    """Conditional logit over each query's head; queries with no right tool there are skipped."""
    from scipy.optimize import minimize  # a dependency of bm25s, so always installed

    keep = [i for i, y in enumerate(ys) if y.any()]
    width = min(len(xs[i]) for i in keep)
    x = np.stack([xs[i][:width] for i in keep])
    target = np.stack([ys[i][:width] for i in keep]).astype(np.float64)
    target /= target.sum(axis=1, keepdims=True)
    penalty = np.array([0.0] + [1.0] * (x.shape[2] - 1))

    def loss(w: Array) -> tuple[float, Array]:
        s = x @ w
        s -= s.max(axis=1, keepdims=True)
        log_p = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
        value = -(target * log_p).sum() / len(x) + l2 * float((penalty * w * w).sum())
        grad = -(x * (target - np.exp(log_p))[:, :, None]).sum(axis=(0, 1)) / len(x)
        return value, grad + 2.0 * l2 * penalty * w

    start = np.zeros(x.shape[2])
    start[0] = 10.0
    weights: Array = minimize(loss, start, jac=True, method="L-BFGS-B").x
    return weights


def hit_at_1(xs: list[Array], ys: list[npt.NDArray[np.bool_]], w: Array) -> float:
    """Share of queries whose re-scored first tool is right (none in the head: a miss)."""
    return float(np.mean([bool(y[int(np.argmax(x @ w))]) for x, y in zip(xs, ys, strict=True)]))


def collect(catalog: Path, queries: list[Any]) -> list[Query]:
    """Each query's head under the hybrid with the head re-scoring off."""
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.index.embedders import get_embedder
    from cartograph.index.rankers.contrast import name_shares
    from cartograph.index.rankers.hybrid import _TOOL_FIELDS, DEFAULT_PARAMS, HybridRanker
    from cartograph.index.tool_index import ToolIndex

    cards = attest_with_unsafe_throwaway_key(load_catalog(catalog))
    index = ToolIndex.build(cards, get_embedder("minilm"))
    params = replace(DEFAULT_PARAMS, head_dense=0.0, head_contrast=0.0, head_name=0.0)
    ranker = HybridRanker(params)
    fields = [(f, float(getattr(params, f"{f}_weight"))) for f in _TOOL_FIELDS]
    vectors = np.asarray(index.corpus.tool_vectors, dtype=np.float64)
    where = {key: i for i, key in enumerate(index.corpus.keys)}
    out = []
    for query in queries:
        ctx = index.context(query.query)
        ranked = ranker.rank(ctx, max(HEADS), k=max(HEADS))
        gold = {where[(g.server, g.tool)] for g in query.gold if (g.server, g.tool) in where}
        positions = [i for i, _ in ranked]
        head = np.array(positions, dtype=np.int64)
        out.append(
            Query(
                scores=np.array([s for _, s in ranked]),
                rows=vectors[positions],
                task=np.asarray(ctx.whole_vector(), dtype=np.float64),
                shares=name_shares(index.corpus.lexical, fields, ctx.query.tokens, head),
                right=np.array([p in gold for p in positions]),
            )
        )
    return out


def training_sets() -> dict[str, list[Query]]:
    from cartograph.eval.data import load_queries

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from train_sets import convert, metatool_held_out

    bfcl = ROOT / "benchmarks" / "results" / "train" / "bfcl"
    convert(TRAIN / "bfcl" / "queries.jsonl", bfcl)
    meta = [q for q in load_queries(TRAIN / "metatool" / "queries.jsonl")]
    meta = [q for q in meta if not metatool_held_out(q.gold[0].tool)]
    meta = random.Random(SEED).sample(meta, min(METATOOL_SAMPLE, len(meta)))
    return {
        "bfcl-train": collect(bfcl / "catalog.json", load_queries(bfcl / "queries.jsonl")),
        "metatool-train": collect(TRAIN / "metatool" / "catalog.json", meta),
    }


def choose(sets: dict[str, list[Query]], columns: tuple[int, ...] = (0, 3)) -> dict[str, Any]:
    """Cross-validate head size × L2 over both sets at once; fit the winner on everything.

    ``columns`` picks the features fitted (indexes into :data:`FEATURES`);
    a feature left out gets weight 0.
    """
    names = list(sets)
    cols = list(columns)
    rows = [(s, q) for s in names for q in sets[s]]
    folds = np.random.default_rng(0).integers(0, FOLDS, len(rows))
    grid = []
    for head in HEADS:
        xs = [head_features(q, head)[:, cols] for _, q in rows]
        ys = [q.right[:head] for _, q in rows]
        plain = np.eye(len(cols))[0]
        base = {s: hit_at_1(*_of(xs, ys, rows, s), plain) for s in names}
        for l2 in L2:
            held: dict[str, list[bool]] = {s: [] for s in names}
            for fold in range(FOLDS):
                train = [i for i in range(len(rows)) if folds[i] != fold]
                w = fit([xs[i] for i in train], [ys[i] for i in train], l2)
                for i in range(len(rows)):
                    if folds[i] == fold:
                        held[rows[i][0]].append(bool(ys[i][int(np.argmax(xs[i] @ w))]))
            transfer = {}
            for s in names:
                w = fit(*_of(xs, ys, rows, s), l2)
                other = next(n for n in names if n != s)
                transfer[f"{s} -> {other}"] = hit_at_1(*_of(xs, ys, rows, other), w)
            cv = {s: float(np.mean(held[s])) for s in names}
            grid.append({"head": head, "l2": l2, "cv": cv, "baseline": base, "transfer": transfer})
    best = max(grid, key=lambda g: (float(np.mean(list(g["cv"].values()))), -g["head"]))
    head = int(best["head"])
    xs = [head_features(q, head)[:, cols] for _, q in rows]
    ys = [q.right[:head] for _, q in rows]
    w = np.zeros(len(FEATURES))
    w[cols] = fit(xs, ys, float(best["l2"]))
    return {
        "head": head,
        "dense_weight": round(float(w[1] / w[0]), 4),
        "contrast_weight": round(float(w[2] / w[0]), 4),
        "name_weight": round(float(w[3] / w[0]), 4),
        "l2": best["l2"],
        "fitted_on": {s: len(sets[s]) for s in names},
        "grid": grid,
    }


def _of(
    xs: list[Array], ys: list[npt.NDArray[np.bool_]], rows: list[tuple[str, Query]], name: str
) -> tuple[list[Array], list[npt.NDArray[np.bool_]]]:
    picked = [i for i, (s, _) in enumerate(rows) if s == name]
    return [xs[i] for i in picked], [ys[i] for i in picked]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--json", action="store_true", help="print the whole grid as JSON")
    parser.add_argument(
        "--features",
        default="fused,name",
        help=f"features to fit, of {','.join(FEATURES)} (fused first); the rest get 0",
    )
    args = parser.parse_args()
    columns = tuple(FEATURES.index(f) for f in args.features.split(",") if f)
    from cartograph.index.embedders import get_embedder

    result = choose(training_sets(), columns)
    doc = {
        "head": result["head"],
        "dense_weight": result["dense_weight"],
        "contrast_weight": result["contrast_weight"],
        "name_weight": result["name_weight"],
        "features": args.features,
        "model": get_embedder("minilm").model_id,
        "fitted_by": "benchmarks/fit_head_rescore.py",
        "fitted_on": result["fitted_on"],
        "l2": result["l2"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for g in result["grid"]:
        cv = " ".join(f"{s} {v:.3f} (from {g['baseline'][s]:.3f})" for s, v in g["cv"].items())
        tr = " ".join(f"{k} {v:.3f}" for k, v in g["transfer"].items())
        print(f"head {g['head']:>2} l2 {g['l2']:g}: cv {cv} | transfer {tr}")
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
