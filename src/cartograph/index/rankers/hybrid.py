"""The hybrid ranker: lexical + dense fusion, server evidence, per-step coverage.

Four general ideas, each a weight in :class:`HybridParams`:

1. **Field-weighted BM25** fused with **dense cosine**, each normalised per
   query (BM25 by its maximum, cosines by their range) so neither scale wins
   by accident. The fields: the whole card text, the tool's *purpose* (name
   and description), its *arguments*, its *name* alone and its *examples*
   (how agents ask), each scored by its own BM25 and weighted. Argument text is weak evidence for
   what a tool is *for*: it names the values a tool takes ("e.g. 'Asia/Tokyo'"),
   so a task that merely mentions such a value ("what time is it in Tokyo")
   should not pull that tool ahead of the one whose purpose it states.
2. **Server evidence**: a tool is likelier to fit when its server fits as a
   whole (BM25 of the server document, cosine to the server centroid). This
   is the paper's stage 1 used as a soft prior instead of a hard filter.
3. **Steps**: the task is scored whole *and* per step (:mod:`..query`); a
   tool's score adds its best step score, so a tool that serves one step well
   is not drowned by the step the whole sentence is mostly about.
4. **Head re-scoring** (:mod:`.contrast`): among the best few tools, one
   whose lexical score comes mostly from task words that are words of its
   *name* is marked down (a word naming a tool must not outweigh the task's
   verb and object); a raw-cosine and a sibling-contrast term are measured
   and off. Fitted on the training sets only.
5. **Coverage** (MMR-style): the first k slots are filled greedily; once a
   step has a tool, that step's pull on later picks is damped, so the k slots
   spread over the steps instead of five variants of one step.

Scoring is split into :func:`features` (the per-query signals, computed once)
and :func:`combine` (cheap arithmetic over them), so cross-validation can try
many parameter settings without recomputing anything. The defaults were
chosen by cross-validation across query folds (``docs/retrieval.md``);
nothing here refers to any benchmark's wording.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from cartograph.index.corpus import SAMPLE_TOOLS, IntArray
from cartograph.index.lexical import Scores, weighted_scores
from cartograph.index.rankers.base import QueryContext, Ranking, top, unit_max, unit_range
from cartograph.index.rankers.contrast import FIT, HeadFit, name_shares, rescore_head

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class HybridParams:
    """The hybrid's free parameters (named defaults; see module docstring)."""

    full_weight: float = 1.0
    purpose_weight: float = 1.0
    name_weight: float = 0.0
    arguments_weight: float = 0.0
    examples_weight: float = 1.0
    dense_weight: float = 0.8
    server_weight: float = 0.2
    server_dense_share: float = 0.5
    step_weight: float = 1.0
    coverage: float = 0.0
    relative_units: float = 0.0
    head_size: int = FIT.head
    """How many of the best tools :mod:`.contrast` re-scores (fitted: ``head_rescore.json``)."""
    head_dense: float = FIT.dense_weight
    head_contrast: float = FIT.contrast_weight
    head_name: float = FIT.name_weight

    @property
    def head(self) -> HeadFit:
        """The head re-scoring these parameters ask for."""
        return HeadFit(self.head_size, self.head_dense, self.head_contrast, self.head_name)


DEFAULT_PARAMS = HybridParams()


@dataclass(frozen=True)
class Features:
    """Per-query signals, one row per unit (row 0: whole task; rows 1..: steps).

    Tool-level matrices are units × tools; server-level ones units × servers.
    A field left out (None) counts as zeros: its weight was zero.
    """

    full: Matrix | None
    purpose: Matrix | None
    name: Matrix | None
    arguments: Matrix | None
    examples: Matrix | None
    dense: Matrix | None
    server_lexical: Matrix
    server_dense: Matrix | None
    tool_server: IntArray
    lexical: Matrix | None = None
    """The field-weighted BM25 (:func:`lexical_scores`) when already summed; the
    fields above are then left out (None)."""

    def restricted(self, positions: IntArray, dense: Matrix | None, p: HybridParams) -> Features:
        """The signals for the tools at ``positions`` only, with their ``dense`` cosines.

        The lexical fields are summed (weighted by ``p``) before they are cut:
        one units × positions matrix instead of one per field.
        """
        summed = self.lexical if self.lexical is not None else lexical_scores(self, p)
        return Features(
            full=None,
            purpose=None,
            name=None,
            arguments=None,
            examples=None,
            dense=dense,
            server_lexical=self.server_lexical,
            server_dense=self.server_dense,
            tool_server=self.tool_server[positions],
            lexical=summed[:, positions],
        )


_TOOL_FIELDS = ("full", "purpose", "name", "arguments", "examples")
_NO_FIELDS: dict[str, Any] = {f"{field}_weight": 0.0 for field in _TOOL_FIELDS}


def units_of(ctx: QueryContext) -> list[Sequence[str]]:
    """The token lists scored: the whole task, then each step (none for a one-step task)."""
    units: list[Sequence[str]] = [ctx.query.tokens, *(c.tokens for c in ctx.query.clauses)]
    return units if len(ctx.query.clauses) >= 2 else units[:1]


def features(
    ctx: QueryContext,
    *,
    use_dense: bool = True,
    params: HybridParams | None = None,
    summed: bool = False,
) -> Features:
    """Compute every signal the hybrid combines, for the task and each step.

    With ``params``, fields whose weight is zero are not scored at all (the
    defaults weight five of the seven BM25 indexes); with ``summed`` too, only
    their weighted sum is computed (:attr:`Features.lexical`), not each field.
    """
    lex = ctx.corpus.lexical
    units = units_of(ctx)
    if summed and params is not None:
        weighted = [(getattr(lex, f), float(getattr(params, f"{f}_weight"))) for f in _TOOL_FIELDS]
        lexical = np.vstack([weighted_scores(weighted, u) for u in units])
        plain = features(ctx, use_dense=use_dense, params=replace(params, **_NO_FIELDS))
        return replace(plain, lexical=lexical)

    def rows(field: str) -> Matrix | None:
        if params is not None and getattr(params, f"{field}_weight") == 0.0:
            return None
        return np.vstack([getattr(lex, field).scores(u) for u in units])

    dense = server_dense = None
    if use_dense:
        vectors = ctx.vectors() if len(units) > 1 else ctx.whole_vector()[None, :]
        sims = ctx.similarities() if len(units) > 1 else ctx.whole_similarities()[None, :]
        dense = sims.astype(np.float64)
        server_dense = ctx.corpus.server_similarities(vectors).astype(np.float64)
    tool_fields = {field: rows(field) for field in _TOOL_FIELDS}
    return Features(
        **tool_fields,
        dense=dense,
        server_lexical=np.vstack([lex.server.scores(u) for u in units]),
        server_dense=server_dense,
        tool_server=ctx.corpus.tool_server,
    )


def unit_scores(f: Features, p: HybridParams) -> Matrix:
    """Fused score of every tool for every unit (units × tools)."""
    lexical = _rowwise(unit_max, lexical_scores(f, p))
    server = _rowwise(unit_max, f.server_lexical)
    fused = lexical
    if f.dense is not None and f.server_dense is not None and p.dense_weight > 0.0:
        fused = (1.0 - p.dense_weight) * lexical + p.dense_weight * _rowwise(unit_range, f.dense)
        share = p.server_dense_share
        server = (1.0 - share) * server + share * _rowwise(unit_range, f.server_dense)
    return fused + p.server_weight * server[:, f.tool_server]


def lexical_scores(f: Features, p: HybridParams) -> Matrix:
    """Field-weighted BM25 (units × tools): a weighted sum of each field's BM25."""
    if f.lexical is not None:
        return f.lexical
    out: Matrix | None = None
    for field in ("full", "purpose", "arguments", "name", "examples"):
        scores: Matrix | None = getattr(f, field)
        if scores is None:
            continue
        term = getattr(p, f"{field}_weight") * scores
        out = term if out is None else out + term
    if out is None:
        return np.zeros((f.server_lexical.shape[0], len(f.tool_server)))
    return out


def combine(f: Features, p: HybridParams, depth: int, k: int) -> Ranking:
    """The final ranking: whole + best step, with step coverage over the first k."""
    scores = unit_scores(f, p)
    if p.relative_units > 0.0:
        scores = relative(scores, p.relative_units)
    whole, steps = scores[0], scores[1:]
    if not len(steps):
        return top(whole, depth)
    base = whole + p.step_weight * steps.max(axis=0)
    if p.coverage <= 0.0:
        return top(base, depth)
    head = _cover(whole, steps, p, min(k, depth))
    rest = base.copy()
    rest[[i for i, _ in head]] = -np.inf
    return head + top(rest, depth - len(head))


def relative(scores: Matrix, power: float) -> Matrix:
    """Divide each unit's scores by its best score to the power ``power`` (0: as is, 1: best = 1).

    A step that matches its tool in other words than the catalog's (low
    absolute scores) then counts as much as one that matches word for word:
    every step gets to put its best tool forward.
    """
    best = np.maximum(scores.max(axis=1, keepdims=True), 1e-9)
    out: Matrix = scores / best**power
    return out


def _cover(whole: Scores, steps: Matrix, p: HybridParams, count: int) -> Ranking:
    """Greedy picks: a step that already has a tool pulls later picks less."""
    weights = np.ones(len(steps))
    taken = np.zeros(len(whole), dtype=bool)
    picked: Ranking = []
    for _ in range(count):
        gain = whole + p.step_weight * (steps * weights[:, None]).max(axis=0)
        gain[taken] = -np.inf
        best = int(np.argmax(gain))
        if not np.isfinite(gain[best]):
            break
        taken[best] = True
        picked.append((best, float(gain[best])))
        weights[int(np.argmax(steps[:, best]))] *= 1.0 - p.coverage
    return picked


def _rowwise(normalise: Callable[[Scores], Scores], matrix: Matrix) -> Matrix:
    return np.vstack([normalise(row) for row in matrix])


# The prefilter's widths: per unit, the best tools by field-weighted BM25; and
# every tool of the best servers by the hybrid's own server evidence.
PREFILTER_LEXICAL: Final = 1000
PREFILTER_SERVERS: Final = 96
# Plus tools spread evenly over the index: the dense cosines are normalised by
# their range per unit, and the candidates alone (all close to the task) would
# narrow it; an even sample brings its low end close to the whole index's.
PREFILTER_SAMPLE: Final = SAMPLE_TOOLS


def candidates(ctx: QueryContext, f: Features, p: HybridParams) -> IntArray:
    """Tools worth a dense score: lexical leaders of each unit and the best servers' tools.

    Lexical scores of every tool are cheap (sparse postings); dense ones are
    a pass over the whole matrix. The hybrid's tool score is a mix of both
    plus its server's score, so a tool that is in neither list would need a
    dense cosine far above every candidate's to reach the top k.
    """
    lexical = lexical_scores(f, p)
    picks: list[IntArray] = []
    for row in lexical:
        hits = np.flatnonzero(row > 0.0)
        if len(hits) > PREFILTER_LEXICAL:
            hits = hits[np.argpartition(-row[hits], PREFILTER_LEXICAL - 1)[:PREFILTER_LEXICAL]]
        picks.append(hits.astype(np.int64))
    server = _server_evidence(f, p).max(axis=0)
    width = min(PREFILTER_SERVERS, len(server))
    best_servers = np.argpartition(-server, width - 1)[:width] if width else server[:0]
    picks.append(ctx.corpus.tools_of(best_servers.astype(np.int64)))
    size = ctx.corpus.size
    if PREFILTER_SAMPLE == SAMPLE_TOOLS:
        picks.append(ctx.corpus.sample)  # its rows are kept float32 (Corpus.sample)
    else:
        picks.append(np.linspace(0, size - 1, min(PREFILTER_SAMPLE, size)).astype(np.int64))
    chosen = np.zeros(size, dtype=bool)  # a mask, not np.unique: no sort of the picks
    for pick in picks:
        chosen[pick] = True
    out: IntArray = np.flatnonzero(chosen).astype(np.int64)
    return out


def _server_evidence(f: Features, p: HybridParams) -> Matrix:
    server = _rowwise(unit_max, f.server_lexical)
    if f.server_dense is not None and p.dense_weight > 0.0:
        share = p.server_dense_share
        server = (1.0 - share) * server + share * _rowwise(unit_range, f.server_dense)
    return server


class HybridRanker:
    """Fused lexical/dense/server scores over the whole task and each step.

    At scale (``ctx.prefilter_min_tools``) the dense signal is computed only
    for :func:`candidates`, in one product for the task and all its steps;
    the dense range each unit is normalised by is then the candidates'.
    """

    name = "hybrid"

    def __init__(self, params: HybridParams = DEFAULT_PARAMS, *, use_dense: bool = True) -> None:
        self.params = params
        self.use_dense = use_dense and params.dense_weight > 0.0

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        p = self.params
        head = p.head
        rescores = self.use_dense and head.active
        # The head is re-scored whole whatever the caller asked for, so the
        # first k tools do not depend on how deep the caller looks.
        wide = max(depth, head.head) if rescores else depth
        limit = ctx.prefilter_min_tools
        if self.use_dense and limit is not None and ctx.corpus.size >= limit:
            ranked = self._rank_prefiltered(ctx, wide, k)
        else:
            f = features(ctx, use_dense=self.use_dense, params=p)
            ranked = combine(f, p, wide, k)
        if rescores:
            fields = [(field, float(getattr(p, f"{field}_weight"))) for field in _TOOL_FIELDS]
            lexical, tokens = ctx.corpus.lexical, ctx.query.tokens
            ranked = rescore_head(
                ranked,
                head,
                query=ctx.whole_vector(),
                vectors=ctx.corpus.tool_vectors,
                shares=lambda positions: name_shares(lexical, fields, tokens, positions),
            )
        return ranked[:depth]

    def _rank_prefiltered(self, ctx: QueryContext, depth: int, k: int) -> Ranking:
        lexical = features(ctx, use_dense=False, params=self.params, summed=True)
        steps = lexical.server_lexical.shape[0] > 1
        vectors = ctx.vectors() if steps else ctx.whole_vector()[None, :]
        server_dense = ctx.corpus.server_similarities(vectors).astype(np.float64)
        lexical = replace(lexical, server_dense=server_dense)
        positions = candidates(ctx, lexical, self.params)
        dense = ctx.similarities_at(positions, steps=steps).astype(np.float64)
        ranked = combine(lexical.restricted(positions, dense, self.params), self.params, depth, k)
        return [(int(positions[i]), score) for i, score in ranked]
