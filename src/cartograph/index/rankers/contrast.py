"""Head re-scoring: tell the few closest candidates apart by what differs between them.

Most first-place misses are not far misses: the right tool is second or
third, behind a sibling that shares most of its text (``get_current_time`` /
``convert_time``, ``git_diff_staged`` / ``git_diff_unstaged``). The fused
score compares every candidate with the task on everything the candidates
share, which is the same for all of them; what tells them apart is a small
part of each vector. Among the ``head`` best tools of the hybrid's ranking,
each tool's score is re-scored as

    fused + dense_weight * (cos(q, t) - best cos in the head)
          + contrast_weight * cos(q - m, t - m)

with ``m`` the mean of the head's tool vectors: the second term is the raw
cosine (the hybrid's dense signal is normalised by its range over the whole
catalog, which squeezes the small differences at the top), the third the
*contrast* — how well the task points along what is distinctive to this
candidate against the others. The head is taken whole rather than per
server: on the BFCL training federation the tool ranked above the right one
sits on another "server" in 469 of 493 such misses (each function lives
once, on the first candidate set that has it).

**Measured, not on by default.** The weights are fitted on the training
sets only (the BFCL training half and MetaTool's training tools) by
``benchmarks/fit_head_rescore.py``; fitted there they help on the training
sets by cross-validation and on MetaTool's held-out tools, and cost first
places on the BFCL evaluation half, LiveMCPBench and the demo set
(``docs/retrieval.md``, "Head re-scoring"), so the hybrid's defaults leave it
off (``HybridParams.head_dense`` and ``head_contrast`` = 0). Cost when on:
one product of the task's vector with ``head`` tool vectors, no model run.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cartograph.index.rankers.base import Ranking

Vector = npt.NDArray[np.floating]


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


def rescore_head(
    ranked: Ranking,
    query: Vector,
    vectors: Vector,
    *,
    head: int,
    dense_weight: float,
    contrast_weight: float,
) -> Ranking:
    """``ranked`` with its first ``head`` tools re-scored and re-ordered; the rest as they were.

    ``vectors`` are the tool vectors of the corpus (rows by position). The
    head's new scores stay at or below the fused ones on the dense term (it
    is measured from the head's best cosine), so the score scale callers
    read (learning's first-place margin, abstention hints) is unchanged.
    """
    count = min(head, len(ranked))
    if count < 2 or (dense_weight == 0.0 and contrast_weight == 0.0):
        return ranked
    positions = np.array([i for i, _ in ranked[:count]], dtype=np.int64)
    rows = np.asarray(vectors[positions], dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    cosines = rows @ q
    scores = np.array([s for _, s in ranked[:count]], dtype=np.float64)
    scores += dense_weight * (cosines - cosines.max())
    scores += contrast_weight * head_contrast(q, rows)
    order = np.argsort(-scores, kind="stable")
    return [(int(positions[i]), float(scores[i])) for i in order] + ranked[count:]
