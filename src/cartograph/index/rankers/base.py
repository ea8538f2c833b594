"""The ranker protocol and the query context every ranker reads.

A ranker turns a task into an ordered list of (tool position, score). Query
embeddings are computed lazily and at most once per query, in one batch for
the whole task and its steps, so lexical rankers never pay for a model call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from cartograph.index.corpus import Corpus
from cartograph.index.embedders.base import Vectors
from cartograph.index.lexical import Scores
from cartograph.index.query import ParsedQuery

Ranking = list[tuple[int, float]]


@dataclass
class QueryContext:
    """One task, parsed, with its embeddings computed on first use."""

    corpus: Corpus
    query: ParsedQuery
    _vectors: Vectors | None = field(default=None, repr=False)

    def vectors(self) -> Vectors:
        """Row 0 embeds the whole task; rows 1.. embed its steps, in order."""
        if self._vectors is None:
            texts = [self.query.text, *(c.text for c in self.query.clauses)]
            self._vectors = self.corpus.embedder.embed(texts)
        vectors: Vectors = self._vectors
        return vectors

    def whole_vector(self) -> Vectors:
        whole: Vectors = self.vectors()[0]
        return whole


class Ranker(Protocol):
    """Ranks every tool of a corpus (or a subset of it) for one task."""

    name: str

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        """The best ``depth`` tools for an agent that asked for ``k`` (k ≤ depth)."""
        ...


def top(scores: Scores, depth: int) -> Ranking:
    """The ``depth`` best positions by score, ties broken by position (stable)."""
    finite = np.isfinite(scores)
    order = np.lexsort((np.arange(len(scores)), -np.where(finite, scores, -np.inf)))
    picked = [int(i) for i in order[:depth] if finite[i]]
    return [(i, float(scores[i])) for i in picked]


def unit_max(scores: Scores) -> Scores:
    """Scale non-negative scores into [0, 1] by the query's best score."""
    best = float(scores.max()) if scores.size else 0.0
    return scores / best if best > 0.0 else np.zeros_like(scores)


def unit_range(scores: Scores) -> Scores:
    """Map scores to [0, 1] by the query's own spread (dense cosines are offset)."""
    if not scores.size:
        return scores
    low, high = float(scores.min()), float(scores.max())
    return (scores - low) / (high - low) if high > low else np.zeros_like(scores)
