"""Choosing the hybrid's free parameters by k-fold cross-validation over queries.

Every parameter of :class:`~cartograph.index.rankers.hybrid.HybridParams` is
a weight, and weights chosen on the same queries they are scored on flatter
the ranker. Here the queries are split into folds; for each fold the best
grid point on the *other* folds ranks the fold's own queries, so the
pooled (out-of-fold) metrics are what an unseen query set can expect. The
shipped defaults are the full-data optimum; quote the held-out numbers.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel

from cartograph.eval.data import EvalQuery
from cartograph.eval.metrics import MRR_DEPTH, Judgement, query_metrics
from cartograph.index.entries import ToolKey
from cartograph.index.rankers.hybrid import Features, HybridParams, combine, features
from cartograph.index.tool_index import ToolIndex

OBJECTIVE: Final = ("R@5", "Hit@5", "MRR")
REPORTED: Final = ("R@5", "G@5", "Hit@5", "MRR")
K: Final = 5

DEFAULT_GRID: Final = tuple(
    HybridParams(
        name_weight=name,
        dense_weight=dense,
        server_weight=server,
        step_weight=step,
        coverage=coverage,
        relative_units=rel,
    )
    for name, dense, server, step, coverage, rel in itertools.product(
        (0.0, 0.5, 1.0), (0.5, 0.65, 0.8), (0.2, 0.4, 0.7), (0.5, 1.0, 2.0), (0.0, 0.3), (0.0, 1.0)
    )
)


class TuneReport(BaseModel):
    """In-sample optimum, and the held-out metrics of choosing it per fold."""

    folds: int
    grid_size: int
    best: dict[str, float]
    in_sample: dict[str, float]
    held_out: dict[str, float]
    fold_choices: list[dict[str, float]]


def cross_validate(
    index: ToolIndex,
    queries: Sequence[EvalQuery],
    grid: Sequence[HybridParams] = DEFAULT_GRID,
    *,
    folds: int = 5,
    seed: int = 0,
) -> TuneReport:
    """Grid search with ``folds``-fold cross-validation (queries shuffled with ``seed``)."""
    keys = index.keys()
    feats = [features(index.context(q.query)) for q in queries]
    judgements = [q.judgement() for q in queries]

    def rows(p: HybridParams, subset: Sequence[int]) -> list[dict[str, float]]:
        return [_metrics(feats[i], p, keys, judgements[i]) for i in subset]

    def objective(p: HybridParams, subset: Sequence[int]) -> float:
        return sum(sum(r[m] for m in OBJECTIVE) for r in rows(p, subset))

    order = list(range(len(queries)))
    random.Random(seed).shuffle(order)  # noqa: S311 - a reproducible split, not a secret
    parts = [order[f::folds] for f in range(folds)]
    held: list[dict[str, float]] = []
    choices: list[HybridParams] = []
    for f, part in enumerate(parts):
        train = [i for g, other in enumerate(parts) if g != f for i in other]
        choice = max(grid, key=lambda p: objective(p, train))
        choices.append(choice)
        held += rows(choice, part)
    best = max(grid, key=lambda p: objective(p, order))
    return TuneReport(
        folds=folds,
        grid_size=len(grid),
        best=_params(best),
        in_sample=_mean(rows(best, order)),
        held_out=_mean(held),
        fold_choices=[_params(c) for c in choices],
    )


def _metrics(
    f: Features, p: HybridParams, keys: list[ToolKey], judgement: Judgement
) -> dict[str, float]:
    ranked = [keys[i] for i, _ in combine(f, p, MRR_DEPTH, K)]
    return query_metrics(ranked, judgement)


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / max(len(rows), 1), 4) for m in REPORTED}


def _params(p: HybridParams) -> dict[str, float]:
    return {k: float(v) for k, v in vars(p).items()}
