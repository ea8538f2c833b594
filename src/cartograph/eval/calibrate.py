"""Calibrating discover's abstention threshold on labelled queries.

There are rarely labelled "nothing fits" tasks, so they are made from the
labelled ones: for each query, its *positive* confidence is the best cosine
of the task (or a step) to any tool; its *negative* confidence is the same
with every tool of the query's gold servers removed, which is exactly the
situation "the catalog has nothing for this". The threshold is the midpoint
that keeps false abstentions on servable tasks within a budget (5 %).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cartograph.eval.data import EvalQuery
from cartograph.index.tool_index import ToolIndex


def confidence_samples(
    index: ToolIndex, queries: Sequence[EvalQuery]
) -> tuple[list[float], list[float]]:
    """(positives, negatives): best cosine with and without the gold servers' tools."""
    corpus = index.corpus
    positives: list[float] = []
    negatives: list[float] = []
    for q in queries:
        ctx = index.context(q.query)
        sims = corpus.tool_similarities(ctx.vectors()).max(axis=0)
        gold_servers = q.judgement().gold_servers
        keep = np.array([e.server not in gold_servers for e in corpus.entries])
        positives.append(float(sims.max()))
        if keep.any():
            negatives.append(float(sims[keep].max()))
    return positives, negatives


def calibrate_abstention(
    index: ToolIndex, queries: Sequence[EvalQuery], *, max_false_abstain: float = 0.05
) -> tuple[float, float, float]:
    """(threshold, false-abstain rate, true-abstain rate) on ``queries``.

    A missed tool fails a task while an extra one costs a few tokens, so the
    threshold is the highest one that abstains on at most ``max_false_abstain``
    of the tasks the catalog *can* serve; the true-abstain rate says how many
    "nothing fits" tasks it then catches.
    """
    positives, negatives = confidence_samples(index, queries)
    pos, neg = np.sort(np.array(positives)), np.array(negatives)
    allowed = int(np.floor(max_false_abstain * len(pos)))
    threshold = float(pos[allowed]) if len(pos) else 0.0
    false_rate = float((pos < threshold).mean()) if len(pos) else 0.0
    true_rate = float((neg < threshold).mean()) if len(neg) else 0.0
    return threshold, false_rate, true_rate
