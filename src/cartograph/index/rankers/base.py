"""The ranker protocol and the query context every ranker reads.

A ranker turns a task into an ordered list of (tool position, score). Query
embeddings are computed lazily and at most once per query, in one batch for
the whole task and its steps, so lexical rankers never pay for a model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from cartograph.index.adapter import QueryAdapter
from cartograph.index.corpus import Corpus
from cartograph.index.embedders.base import Vectors
from cartograph.index.embedders.query_cache import QUERY_VECTORS, QueryVectorCache
from cartograph.index.lexical import Scores
from cartograph.index.query import ParsedQuery

Ranking = list[tuple[int, float]]


@runtime_checkable
class SpanEmbedder(Protocol):
    """An embedder that can also pool vectors for spans of one text from a single run."""

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Vectors:
        """Row 0: ``text`` (as ``embed`` would give it); row i: the i-th span, in context."""
        ...


@dataclass
class QueryContext:
    """One task, parsed, with its embeddings computed on first use.

    The whole task and its steps are embedded separately and lazily, so the
    single-signal rankers (dense, two-stage) pay for one model run and
    lexical rankers for none. With ``pooled_steps`` and an embedder that
    supports it (:class:`SpanEmbedder`), step vectors are pooled from the
    whole task's token vectors: one model run per query instead of one per
    step, for a small loss of quality (``docs/retrieval.md``). Model output is
    looked up in ``vector_cache`` first, so a repeated task runs no model.
    """

    corpus: Corpus
    query: ParsedQuery
    pooled_steps: bool = False
    adapter: QueryAdapter | None = None
    """Maps every query vector (task and steps) before it meets a tool vector."""
    prefilter_min_tools: int | None = None
    """From this many tools the hybrid scores only prefiltered candidates densely
    (:mod:`cartograph.index.rankers.hybrid`); None: always every tool."""
    vector_cache: QueryVectorCache | None = field(default=QUERY_VECTORS, repr=False)
    """Raw model output by (model id, texts); None: always run the model."""
    _whole: Vectors | None = field(default=None, repr=False)
    _whole_sims: Vectors | None = field(default=None, repr=False)
    _candidate_sims: Vectors | None = field(default=None, repr=False)
    _steps: Vectors | None = field(default=None, repr=False)
    _similarities: Vectors | None = field(default=None, repr=False)

    def vectors(self) -> Vectors:
        """Row 0 embeds the whole task; rows 1.. embed its steps, in order."""
        steps = self.step_vectors()
        return np.vstack([self.whole_vector()[None, :], steps]).astype(np.float32, copy=False)

    def similarities(self) -> Vectors:
        """Cosine of every :meth:`vectors` row to every tool, computed once per query.

        The hybrid ranker and discover's confidence read the same product; at
        100k tools one product streams 150 MB of vectors (~20 ms of CPU).
        """
        if self._similarities is None:
            self._similarities = self.corpus.tool_similarities(self.vectors())
        sims: Vectors = self._similarities
        return sims

    def whole_similarities(self) -> Vectors:
        """Cosine of the whole task to every tool; row 0 of :meth:`similarities` if known."""
        if self._similarities is not None:
            whole: Vectors = self._similarities[0]
            return whole
        if self._whole_sims is None:
            self._whole_sims = self.corpus.tool_similarities(self.whole_vector())[0]
        row: Vectors = self._whole_sims
        return row

    def similarities_at(self, positions: npt.NDArray[np.int64], *, steps: bool) -> Vectors:
        """Cosine of the task (and, with ``steps``, each step) to the tools at ``positions``.

        The prefiltered hybrid's one matrix product: every unit of the task
        against only its candidates. Kept for :meth:`best_similarity`.
        """
        vectors = self.vectors() if steps else self.whole_vector()[None, :]
        sims = self.corpus.tool_similarities_at(vectors, positions)
        self._candidate_sims = sims
        return sims

    def best_similarity(self) -> float:
        """The best cosine of the task or any step to any tool (discover's confidence).

        After a prefiltered ranking, the best over its candidates: the
        rankers' product is reused, never a second pass over every tool.
        """
        best = self._confidence_sims()
        return float(np.max(best)) if best.size else 0.0

    def best_per_row(self) -> Vectors:
        """Each :meth:`vectors` row's best cosine to any tool (prefiltered: to any candidate)."""
        sims = self._confidence_sims()
        rows: Vectors = sims.max(axis=1) if sims.size else np.zeros(sims.shape[0], dtype=np.float32)
        return rows

    def _confidence_sims(self) -> Vectors:
        if self._similarities is None and self._candidate_sims is not None:
            return self._candidate_sims
        return self.similarities()

    def whole_vector(self) -> Vectors:
        if self._whole is None:
            self._whole = self._adapt(self._embed([self.query.text]))[0]
        whole: Vectors = self._whole
        return whole

    def step_vectors(self) -> Vectors:
        """One row per step; a step that is the whole task reuses its vector.

        When the whole task is not embedded yet it goes into the same call as
        the steps: one cache entry per task, and each text still runs alone.
        """
        if self._steps is None:
            clauses = self.query.clauses
            embedder = self.corpus.embedder
            if len(clauses) == 1 and clauses[0].text == self.query.text:
                self._steps = self.whole_vector()[None, :]
            elif self.pooled_steps and isinstance(embedder, SpanEmbedder):
                spans = [(c.start, c.end) for c in clauses]
                rows = self._adapt(self._embed_spans(embedder, spans))
                self._whole, self._steps = rows[0], rows[1:]
            elif self._whole is None:
                rows = self._adapt(self._embed([self.query.text, *(c.text for c in clauses)]))
                self._whole, self._steps = rows[0], rows[1:]
            else:
                self._steps = self._adapt(self._embed([c.text for c in clauses]))
        steps: Vectors = self._steps
        return steps

    def _embed(self, texts: list[str]) -> Vectors:
        if self.vector_cache is None:
            return self.corpus.embedder.embed(texts)
        return self.vector_cache.embed(self.corpus.embedder, texts)

    def _embed_spans(self, embedder: SpanEmbedder, spans: list[tuple[int, int]]) -> Vectors:
        text = self.query.text
        if self.vector_cache is None:
            return embedder.embed_spans(text, spans)
        key = (self.corpus.embedder.model_id, "spans", text, tuple(spans))
        return self.vector_cache.get_or_compute(key, lambda: embedder.embed_spans(text, spans))

    def _adapt(self, vectors: Vectors) -> Vectors:
        return vectors if self.adapter is None else self.adapter.apply(vectors)


class Ranker(Protocol):
    """Ranks every tool of a corpus (or a subset of it) for one task."""

    name: str

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        """The best ``depth`` tools for an agent that asked for ``k`` (k ≤ depth)."""
        ...


def top(scores: Scores, depth: int) -> Ranking:
    """The ``depth`` best positions by score, ties broken by position (stable).

    Only the tools scoring at least the ``depth``-th best score are sorted (a
    linear-time partition finds it): at 100k tools a full sort is ~10 ms of
    CPU per ranking, the partition ~1 ms.
    """
    size = len(scores)
    if depth <= 0 or size == 0:
        return []
    finite = np.isfinite(scores)
    keyed = np.where(finite, scores, -np.inf)
    if depth < size:
        # Selecting the depth-th *smallest* of the negated scores: numpy's
        # introselect is ~10x slower selecting near the top of an array that
        # is mostly one value (BM25: zeros), measured 12.8 vs 1.2 ms at 100k.
        kth = -np.partition(-keyed, depth - 1)[depth - 1]
        finite &= keyed >= kth  # every tool tied with the cut stays, so ties keep position order
    candidates = np.flatnonzero(finite)
    order = candidates[np.lexsort((candidates, -keyed[candidates]))][:depth]
    return [(int(i), float(scores[i])) for i in order]


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
