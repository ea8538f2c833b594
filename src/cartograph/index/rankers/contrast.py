"""Head re-scoring: look again at the few best tools, where first places are lost.

Most first-place misses are not far misses: the right tool is second or
third, behind a sibling or a tool that one word of the task happens to name.
Among the ``head`` best tools of the hybrid's ranking each score becomes

    fused − name_weight × name share
          + dense_weight × (cos(q, t) − best cos in the head)
          + contrast_weight × cos(q − m, t − m)

**Name share (on).** The share of a tool's field-weighted BM25 that comes
from task words that are words of its *name* (:func:`name_shares`). A name
word is in every field that holds the name — the whole text, the purpose,
the example tasks written from the name — so it counts two or three times a
word of the description, and a task word that merely names a tool ("graph"
→ ``read_graph``, a server or product named in passing) outweighs the verb
and object the task is about. The penalty takes back part of that lead only
where the decision is close (among the head), and only as far as a tool's
lexical evidence *is* its name.

**Raw cosine and sibling contrast (measured, off).** ``cos(q − m, t − m)``,
m the mean of the head's tool vectors, scores what is distinctive to each
candidate against the others; the raw cosine undoes the range normalisation
that squeezes the top. Fitted on the training sets they gained there but
lost first places on three evaluation sets (``docs/retrieval.md``, "Head
re-scoring"), so their weights are 0.

All weights and the head's size are fitted on the training sets only (the
BFCL training half, MetaTool's training tools) by
``benchmarks/fit_head_rescore.py``, which writes ``head_rescore.json`` beside
this module. Cost: a postings lookup per task word and field for ``head``
tools (~0.1 ms at 527 tools, under 1 ms at 100k), no model run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Final

import numpy as np
import numpy.typing as npt

from cartograph.index.corpus import IntArray, LexicalFields
from cartograph.index.rankers.base import Ranking

Vector = npt.NDArray[np.floating]
FITTED_FILE: Final = "head_rescore.json"


@dataclass(frozen=True)
class HeadFit:
    """The head re-scoring's size and weights (fitted: ``head_rescore.json``)."""

    head: int
    dense_weight: float = 0.0
    contrast_weight: float = 0.0
    name_weight: float = 0.0

    @property
    def active(self) -> bool:
        """Whether any term is on (a head of one tool has nothing to re-order)."""
        return self.head >= 2 and any((self.dense_weight, self.contrast_weight, self.name_weight))


def load_fit() -> HeadFit:
    """The shipped fit: ``head_rescore.json``, written by ``benchmarks/fit_head_rescore.py``."""
    doc = json.loads((files("cartograph.index.rankers") / FITTED_FILE).read_text("utf-8"))
    return HeadFit(
        head=int(doc["head"]),
        dense_weight=float(doc["dense_weight"]),
        contrast_weight=float(doc["contrast_weight"]),
        name_weight=float(doc["name_weight"]),
    )


FIT: Final = load_fit()


def head_contrast(query: Vector, tools: Vector) -> npt.NDArray[np.float64]:
    """cos(q − m, t − m) for each row t of ``tools``, m the rows' mean.

    What each candidate has that the others do not, against what the task
    has beyond what they all share. Zero for a lone candidate (nothing to
    contrast) or a task at the mean.
    """
    rows = np.asarray(tools, dtype=np.float64)
    out = np.zeros(len(rows))
    if len(rows) < 2:
        return out
    mean = rows.mean(axis=0)
    spread = rows - mean
    norms = np.linalg.norm(spread, axis=1)
    rest = np.asarray(query, dtype=np.float64) - mean
    size = float(np.linalg.norm(rest))
    live = norms > 1e-9
    if size > 1e-9 and live.any():
        out[live] = (spread[live] @ rest) / (norms[live] * size)
    return out


def name_shares(
    lexical: LexicalFields,
    fields: Sequence[tuple[str, float]],
    tokens: Sequence[str],
    positions: IntArray,
) -> npt.NDArray[np.float64]:
    """Per tool at ``positions``: the share of its field-weighted BM25 won by its name's words.

    ``fields`` are the hybrid's (field name, weight) pairs. A task word that
    is a word of a tool's name scores in every field that holds the name
    (the whole text, the purpose, the examples written from the name), so
    it weighs two or three times a word of the description: "graph" in a
    task puts ``read_graph`` ahead of the tool that does what the task's
    verb and object say. 1.0 when every matching word is a name word.
    """
    words = list(dict.fromkeys(tokens))
    out = np.zeros(len(positions))
    if not words or not len(positions):
        return out
    total = np.zeros((len(words), len(positions)))
    for field, weight in fields:
        if weight:
            total += weight * getattr(lexical, field).token_scores(words, positions)
    named = lexical.name.token_scores(words, positions) > 0.0
    sums = total.sum(axis=0)
    live = sums > 0.0
    out[live] = (total * named).sum(axis=0)[live] / sums[live]
    return out


def rescore_head(
    ranked: Ranking,
    fit: HeadFit,
    *,
    query: Vector,
    vectors: Vector,
    shares: Callable[[IntArray], npt.NDArray[np.float64]],
) -> Ranking:
    """``ranked`` with its first ``fit.head`` tools re-scored and re-ordered; the rest as they were.

    ``vectors`` are the corpus's tool vectors (rows by position) and
    ``shares`` gives :func:`name_shares` for head positions (called only
    when its weight is set). Every term is zero for the head's best tool on
    it or subtracts, so the head's scores stay at or below the fused ones and
    the scale callers read (learning's first-place margin) is kept; the
    scores of the whole list stay in descending order.
    """
    count = min(fit.head, len(ranked))
    if count < 2 or not fit.active:
        return ranked
    positions = np.array([i for i, _ in ranked[:count]], dtype=np.int64)
    scores = np.array([s for _, s in ranked[:count]], dtype=np.float64)
    if fit.dense_weight or fit.contrast_weight:
        rows = np.asarray(vectors[positions], dtype=np.float64)
        q = np.asarray(query, dtype=np.float64)
        cosines = rows @ q
        scores += fit.dense_weight * (cosines - cosines.max())
        scores += fit.contrast_weight * head_contrast(q, rows)
    if fit.name_weight:
        scores -= fit.name_weight * shares(positions)
    order = np.argsort(-scores, kind="stable")
    head = [(int(positions[i]), float(scores[i])) for i in order]
    rest = ranked[count:]
    # The head stays first and the list stays sorted by score (learning blends
    # on these scores): the rest moves down by however far the head's last
    # tool fell below the first of the rest.
    drop = max(0.0, rest[0][1] - head[-1][1]) if rest else 0.0
    return head + [(i, score - drop) for i, score in rest] if drop else head + rest
