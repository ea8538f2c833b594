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
from dataclasses import dataclass
from typing import Final

from pydantic import BaseModel

from cartograph.eval.data import EvalQuery
from cartograph.eval.metrics import MRR_DEPTH, Judgement, query_metrics
from cartograph.index.entries import ToolKey
from cartograph.index.rankers.hybrid import Features, HybridParams, combine, features
from cartograph.index.tool_index import ToolIndex

OBJECTIVE: Final = ("R@5", "Hit@5", "MRR")
REPORTED: Final = ("R@5", "G@5", "Hit@1", "Hit@5", "MRR")
K: Final = 5

# The examples field is empty on cards whose generator does not fill it; then
# its weight ties and the first value (1.0) is chosen, so examples count by
# default once cards carry them. The name field alone was never chosen (0).
DEFAULT_GRID: Final = tuple(
    HybridParams(
        purpose_weight=purpose,
        examples_weight=examples,
        dense_weight=dense,
        server_weight=server,
        step_weight=step,
        relative_units=rel,
    )
    for examples, purpose, dense, server, step, rel in itertools.product(
        (1.0, 0.5, 0.0),
        (0.0, 0.5, 1.0),
        (0.5, 0.65, 0.8),
        (0.2, 0.4, 0.7),
        (0.5, 1.0, 2.0),
        (0.0, 1.0),
    )
)


class TuneReport(BaseModel):
    """In-sample optimum, and the held-out metrics of choosing it per fold.

    ``in_sample`` and ``held_out`` pool every set's queries; ``per_set`` gives
    each named set's own held-out metrics.
    """

    folds: int
    grid_size: int
    best: dict[str, float]
    in_sample: dict[str, float]
    held_out: dict[str, float]
    fold_choices: list[dict[str, float]]
    per_set: dict[str, dict[str, float]] = {}


@dataclass(frozen=True)
class TuneSet:
    """One query set over its own index (a catalog), named for the report."""

    name: str
    index: ToolIndex
    queries: Sequence[EvalQuery]


def cross_validate(
    index: ToolIndex,
    queries: Sequence[EvalQuery],
    grid: Sequence[HybridParams] = DEFAULT_GRID,
    *,
    folds: int = 5,
    seed: int = 0,
) -> TuneReport:
    """Grid search with ``folds``-fold cross-validation (queries shuffled with ``seed``)."""
    return cross_validate_sets([TuneSet("queries", index, queries)], grid, folds=folds, seed=seed)


def cross_validate_sets(
    sets: Sequence[TuneSet],
    grid: Sequence[HybridParams] = DEFAULT_GRID,
    *,
    folds: int = 5,
    seed: int = 0,
) -> TuneReport:
    """Cross-validation over several query sets at once, each weighing the same.

    Each set is split into ``folds`` parts; fold f holds out part f of every
    set. The objective is the sum over sets of each set's *mean* metrics, so
    a 90-query single-step set and a 95-query multi-step set count equally
    and one kind of task cannot be bought with the other.
    """
    scored = [_Scored(s) for s in sets]
    parts = [s.split(folds, seed) for s in scored]

    def objective(p: HybridParams, fold: int | None) -> float:
        total = 0.0
        for s, split in zip(scored, parts, strict=True):
            subset = [i for g, part in enumerate(split) if g != fold for i in part]
            total += sum(sum(r[m] for m in OBJECTIVE) for r in s.rows(p, subset)) / max(
                len(subset), 1
            )
        return total

    held: dict[str, list[dict[str, float]]] = {s.name: [] for s in sets}
    choices: list[HybridParams] = []
    for f in range(folds):
        choice = max(grid, key=lambda p: objective(p, f))
        choices.append(choice)
        for s, split in zip(scored, parts, strict=True):
            held[s.name] += s.rows(choice, split[f])
    best = max(grid, key=lambda p: objective(p, None))
    every = [list(range(len(s.queries))) for s in scored]
    return TuneReport(
        folds=folds,
        grid_size=len(grid),
        best=_params(best),
        in_sample=_mean(
            [r for s, idx in zip(scored, every, strict=True) for r in s.rows(best, idx)]
        ),
        held_out=_mean([r for rows in held.values() for r in rows]),
        fold_choices=[_params(c) for c in choices],
        per_set={name: _mean(rows) for name, rows in held.items()},
    )


class _Scored:
    """A set's per-query signals, computed once; any grid point is then cheap to score."""

    def __init__(self, tune_set: TuneSet) -> None:
        self.name = tune_set.name
        self.queries = tune_set.queries
        self.keys = tune_set.index.keys()
        self.feats = [features(tune_set.index.context(q.query)) for q in tune_set.queries]
        self.judgements = [q.judgement() for q in tune_set.queries]

    def rows(self, p: HybridParams, subset: Sequence[int]) -> list[dict[str, float]]:
        return [_metrics(self.feats[i], p, self.keys, self.judgements[i]) for i in subset]

    def split(self, folds: int, seed: int) -> list[list[int]]:
        order = list(range(len(self.queries)))
        random.Random(seed).shuffle(order)  # noqa: S311 - a reproducible split, not a secret
        return [order[f::folds] for f in range(folds)]


def _metrics(
    f: Features, p: HybridParams, keys: list[ToolKey], judgement: Judgement
) -> dict[str, float]:
    ranked = [keys[i] for i, _ in combine(f, p, MRR_DEPTH, K)]
    return query_metrics(ranked, judgement)


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / max(len(rows), 1), 4) for m in REPORTED}


def _params(p: HybridParams) -> dict[str, float]:
    return {k: float(v) for k, v in vars(p).items()}
