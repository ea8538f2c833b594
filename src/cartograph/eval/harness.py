"""The evaluation harness: every ranker, over each card set, on one query set.

Card sets are what the index is built from: ``template`` (cards generated and
signed offline by :func:`cartograph.cards.attest.attest_with_unsafe_throwaway_key`), ``raw``
(the publisher's own text: a measurement baseline, never served) and any
signed card folder given by the caller. Each (card set, ranker) row gets the
mean of every metric with a bootstrap interval, and the per-query failures
(no gold tool in the top 5) with the rank of the first gold tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from pydantic import BaseModel

from cartograph.eval.data import EvalQuery
from cartograph.eval.intervals import bootstrap_interval
from cartograph.eval.metrics import METRIC_NAMES, MRR_DEPTH, expected_random, query_metrics
from cartograph.index.tool_index import ToolIndex

EVAL_K: Final = 5
RANDOM: Final = "random"

Progress = Callable[[str], None]


class MetricValue(BaseModel):
    mean: float
    low: float
    high: float


class Failure(BaseModel):
    """A query with no gold tool in the top 5."""

    id: str
    query: str
    gold_rank: int | None
    top: list[str]
    gold: list[str]


class EvalRow(BaseModel):
    card_set: str
    method: str
    metrics: dict[str, MetricValue]
    failures: list[Failure]
    expected: bool = False


class EvalReport(BaseModel):
    queries: int
    tools: int
    embedder: str
    rows: list[EvalRow]


def evaluate(
    indexes: Mapping[str, ToolIndex],
    queries: Sequence[EvalQuery],
    methods: Sequence[str],
    *,
    progress: Progress | None = None,
) -> EvalReport:
    """Run every method over every named index (card set) and collect the table."""
    rows: list[EvalRow] = []
    for card_set, index in indexes.items():
        for method in methods:
            if progress is not None:
                progress(f"{card_set}/{method}")
            rows.append(_evaluate_one(card_set, index, queries, method))
    first = next(iter(indexes.values()), None)
    return EvalReport(
        queries=len(queries),
        tools=first.size if first is not None else 0,
        embedder=first.corpus.embedder.model_id if first is not None else "",
        rows=rows,
    )


def _evaluate_one(
    card_set: str, index: ToolIndex, queries: Sequence[EvalQuery], method: str
) -> EvalRow:
    keys = index.keys()
    per_query: list[dict[str, float]] = []
    failures: list[Failure] = []
    for q in queries:
        judgement = q.judgement()
        if method == RANDOM:
            per_query.append(expected_random(judgement, keys))
            continue
        ranked = [keys[i] for i, _ in index.rank(q.query, EVAL_K, method=method, depth=MRR_DEPTH)]
        values = query_metrics(ranked, judgement)
        per_query.append(values)
        if values["Hit@5"] == 0.0:
            failures.append(_failure(q, ranked, index, method))
    return EvalRow(
        card_set=card_set,
        method=method,
        metrics={name: _summarise([v[name] for v in per_query]) for name in METRIC_NAMES},
        failures=failures,
        expected=method == RANDOM,
    )


def _failure(q: EvalQuery, ranked: list[tuple[str, str]], index: ToolIndex, method: str) -> Failure:
    """The failure record; the gold rank is looked up past the MRR depth if needed."""
    gold = q.judgement().gold
    full = ranked
    if not any(key in gold for key in ranked):
        keys = index.keys()
        full = [keys[i] for i, _ in index.rank(q.query, EVAL_K, method=method, depth=index.size)]
    # None: the ranker never ranks a gold tool (e.g. two-stage's stage 1 dropped its server).
    rank = next((i + 1 for i, key in enumerate(full) if key in gold), None)
    return Failure(
        id=q.id,
        query=q.query,
        gold_rank=rank,
        top=[f"{s}/{t}" for s, t in ranked[:EVAL_K]],
        gold=sorted(f"{s}/{t}" for s, t in gold),
    )


def _summarise(values: list[float]) -> MetricValue:
    low, high = bootstrap_interval(values)
    mean = sum(values) / len(values) if values else 0.0
    return MetricValue(mean=round(mean, 4), low=round(low, 4), high=round(high, 4))
