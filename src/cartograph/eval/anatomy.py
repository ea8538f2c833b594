"""Failure anatomy: for each task whose first tool is wrong, which signal put it there.

The hybrid ranker fuses two signals (field-weighted BM25 and dense cosine,
plus server evidence and per-step scores). When it ranks a wrong tool first,
the useful question is *which* signal was wrong: if the lexical side ranked
the gold tool above the winner and the dense side did the opposite, a better
fusion could fix it; if both signals prefer the winner, or neither finds the
gold tool at all, only better card text or a better model can. Each signal
is aggregated exactly as the hybrid aggregates the fused score (whole task
plus ``step_weight`` x best step, each unit normalised as the hybrid does),
so a signal's rank here is the rank that signal alone would give.

Used by ``benchmarks/failure_anatomy.py`` and quoted in ``docs/retrieval.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final, Literal

import numpy as np
from pydantic import BaseModel

from cartograph.eval.data import EvalQuery
from cartograph.index.lexical import Scores
from cartograph.index.rankers.base import unit_max, unit_range
from cartograph.index.rankers.hybrid import (
    DEFAULT_PARAMS,
    Features,
    HybridParams,
    Matrix,
    combine,
    features,
    lexical_scores,
)
from cartograph.index.tool_index import ToolIndex

UNREACHED_DEPTH: Final = 20
"""A gold tool below this rank for both signals is one neither signal finds."""

Cause = Literal[
    "neither signal finds it",
    "dense overrules lexical",
    "lexical overrules dense",
    "both signals prefer the winner",
    "fusion extras (server, steps)",
]
CAUSES: Final[tuple[Cause, ...]] = (
    "neither signal finds it",
    "dense overrules lexical",
    "lexical overrules dense",
    "both signals prefer the winner",
    "fusion extras (server, steps)",
)


class Miss(BaseModel):
    """One task whose first tool is not a gold tool."""

    id: str
    query: str
    gold: str
    winner: str
    gold_rank: int | None
    """1-based fused rank of the best-ranked gold tool (``None``: below the depth)."""
    same_server: bool
    """The winner is a sibling on the gold tool's server."""
    gold_lexical_rank: int
    gold_dense_rank: int
    winner_lexical_rank: int
    winner_dense_rank: int
    cause: Cause


class Anatomy(BaseModel):
    """Counts per outcome and per cause, and every miss."""

    queries: int
    first: int
    sibling_first: int
    """A sibling on the gold tool's server first, the gold tool in the top 5."""
    other_server_first_gold_in_top5: int
    gold_not_in_top5: int
    causes: dict[str, int]
    misses: list[Miss]


def failure_anatomy(
    index: ToolIndex,
    queries: Sequence[EvalQuery],
    params: HybridParams = DEFAULT_PARAMS,
    *,
    depth: int = 100,
    unreached: int = UNREACHED_DEPTH,
) -> Anatomy:
    """Classify every task the hybrid (with ``params``) does not get right first.

    ``unreached``: a gold tool ranked below this by both signals alone counts as
    one neither signal finds.
    """
    keys = index.keys()
    misses: list[Miss] = []
    first = 0
    for q in queries:
        f = features(index.context(q.query))
        ranked = [i for i, _ in combine(f, params, depth, 5)]
        gold = {i for i, key in enumerate(keys) if key in q.judgement().gold}
        if not gold:
            continue
        if ranked and ranked[0] in gold:
            first += 1
            continue
        misses.append(_miss(q, f, params, ranked, gold, keys, unreached))
    causes = Counter(m.cause for m in misses)
    return Anatomy(
        queries=len(queries),
        first=first,
        sibling_first=sum(1 for m in misses if m.same_server and _in_top5(m)),
        other_server_first_gold_in_top5=sum(1 for m in misses if not m.same_server and _in_top5(m)),
        gold_not_in_top5=sum(1 for m in misses if not _in_top5(m)),
        causes={c: causes.get(c, 0) for c in CAUSES},
        misses=misses,
    )


def _in_top5(miss: Miss) -> bool:
    return miss.gold_rank is not None and miss.gold_rank <= 5


def signal_scores(f: Features, p: HybridParams) -> tuple[Scores, Scores]:
    """Lexical-only and dense-only tool scores, aggregated over units as the hybrid does."""
    lexical = _aggregate(_rows(unit_max, lexical_scores(f, p)), p)
    dense = f.dense if f.dense is not None else np.zeros_like(f.full)
    return lexical, _aggregate(_rows(unit_range, dense), p)


def _miss(
    q: EvalQuery,
    f: Features,
    p: HybridParams,
    ranked: list[int],
    gold: set[int],
    keys: list[tuple[str, str]],
    unreached: int,
) -> Miss:
    position = {tool: rank for rank, tool in enumerate(ranked, start=1)}
    best_gold = min(gold, key=lambda g: position.get(g, len(keys) + 1))
    winner = ranked[0]
    lexical, dense = (_ranks(s) for s in signal_scores(f, p))
    return Miss(
        id=q.id,
        query=q.query,
        gold="/".join(keys[best_gold]),
        winner="/".join(keys[winner]),
        gold_rank=position.get(best_gold),
        same_server=keys[best_gold][0] == keys[winner][0],
        gold_lexical_rank=int(lexical[best_gold]),
        gold_dense_rank=int(dense[best_gold]),
        winner_lexical_rank=int(lexical[winner]),
        winner_dense_rank=int(dense[winner]),
        cause=classify(lexical, dense, best_gold, winner, unreached=unreached),
    )


def classify(
    lexical: Scores, dense: Scores, gold: int, winner: int, *, unreached: int = UNREACHED_DEPTH
) -> Cause:
    """Why ``winner`` beat ``gold``, from each signal's 1-based ranks of every tool."""
    if lexical[gold] > unreached and dense[gold] > unreached:
        return "neither signal finds it"
    lexical_right = lexical[gold] < lexical[winner]
    dense_right = dense[gold] < dense[winner]
    if lexical_right and not dense_right:
        return "dense overrules lexical"
    if dense_right and not lexical_right:
        return "lexical overrules dense"
    if not lexical_right:
        return "both signals prefer the winner"
    return "fusion extras (server, steps)"


def _ranks(scores: Scores) -> Scores:
    """1-based rank of every tool by ``scores`` (ties broken by position, as ``top``)."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    ranks: Scores = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def _rows(normalise: Callable[[Scores], Scores], matrix: Matrix) -> Matrix:
    return np.vstack([normalise(row) for row in matrix])


def _aggregate(units: Matrix, p: HybridParams) -> Scores:
    whole: Scores = units[0]
    steps = units[1:]
    return whole + p.step_weight * steps.max(axis=0) if len(steps) else whole
