"""Single-signal rankers: flat dense, BM25, Jaccard and random.

They are the baselines of the evaluation table and stay deliberately plain:
each scores the whole task against each tool with one signal.
"""

from __future__ import annotations

import hashlib

import numpy as np

from cartograph.index.lexical import Scores
from cartograph.index.rankers.base import QueryContext, Ranking, top


def dense_scores(ctx: QueryContext) -> Scores:
    """Cosine of the whole task to every tool vector (rows are unit length)."""
    scores: Scores = ctx.whole_similarities().astype(np.float64)
    return scores


def bm25_scores(ctx: QueryContext) -> Scores:
    """BM25 over the tool's whole card text (name + description + arguments)."""
    return ctx.corpus.lexical.full.scores(ctx.query.tokens)


class DenseRanker:
    """Flat dense retrieval: cosine over all tools."""

    name = "dense"

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        return top(dense_scores(ctx), depth)


class BM25Ranker:
    """Flat BM25 over card text."""

    name = "bm25"

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        return top(bm25_scores(ctx), depth)


class JaccardRanker:
    """The paper's keyword baseline: Jaccard of token sets."""

    name = "jaccard"

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        return top(ctx.corpus.lexical.jaccard.scores(ctx.query.tokens), depth)


class RandomRanker:
    """A uniformly random order, seeded by the task text so runs repeat.

    The evaluation reports its *expected* metrics analytically; this ranker
    exists so that ``discover --method random`` answers like every other.
    """

    name = "random"

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        seed = int.from_bytes(hashlib.sha256(ctx.query.text.encode()).digest()[:8], "little")
        scores = np.random.default_rng(seed).random(ctx.corpus.size)
        return top(scores, depth)
