"""Rankers over verified cards, selectable by name per query and in config."""

from __future__ import annotations

from typing import Final

from cartograph import error_codes as codes
from cartograph.errors import RetrievalError
from cartograph.index.rankers.base import QueryContext, Ranker, Ranking
from cartograph.index.rankers.hybrid import DEFAULT_PARAMS, HybridParams, HybridRanker
from cartograph.index.rankers.simple import BM25Ranker, DenseRanker, JaccardRanker, RandomRanker
from cartograph.index.rankers.two_stage import TwoStageRanker, stage_one_width

RANKER_NAMES: Final = ("hybrid", "two-stage", "dense", "bm25", "jaccard", "random")


def get_ranker(name: str) -> Ranker:
    """The ranker called ``name`` (one of :data:`RANKER_NAMES`)."""
    factories: dict[str, type[Ranker]] = {
        "hybrid": HybridRanker,
        "two-stage": TwoStageRanker,
        "dense": DenseRanker,
        "bm25": BM25Ranker,
        "jaccard": JaccardRanker,
        "random": RandomRanker,
    }
    factory = factories.get(name)
    if factory is None:
        raise RetrievalError(
            f"unknown ranker {name!r}; choose one of: {', '.join(RANKER_NAMES)}",
            code=codes.UNKNOWN_RANKER,
        )
    return factory()


__all__ = [
    "DEFAULT_PARAMS",
    "RANKER_NAMES",
    "BM25Ranker",
    "DenseRanker",
    "HybridParams",
    "HybridRanker",
    "JaccardRanker",
    "QueryContext",
    "RandomRanker",
    "Ranker",
    "Ranking",
    "TwoStageRanker",
    "get_ranker",
    "stage_one_width",
]
