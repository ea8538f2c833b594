"""The paper's two-stage retrieval (§3.3), exactly as specified.

Stage 1 keeps the top s = min(m, max(2, ⌊2k/n̄⌋ + 1)) servers by cosine of
the task to each server centroid μᵢ (the mean of its tool vectors); stage 2
ranks only those servers' tools by cosine. Tools of other servers are not
ranked at all, so a stage-1 miss is a miss at every depth.
"""

from __future__ import annotations

import numpy as np

from cartograph.index.rankers.base import QueryContext, Ranking, top
from cartograph.index.rankers.simple import dense_scores


def stage_one_width(servers: int, tools: int, k: int) -> int:
    """s = min(m, max(2, ⌊2k/n̄⌋ + 1)) with n̄ = tools / servers."""
    if servers <= 0:
        return 0
    mean_tools = tools / servers
    return min(servers, max(2, int(2 * k // mean_tools) + 1))


class TwoStageRanker:
    """Server centroids first, then tools within the chosen servers."""

    name = "two-stage"

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        corpus = ctx.corpus
        width = stage_one_width(len(corpus.servers), corpus.size, k)
        server_cos = corpus.server_similarities(ctx.whole_vector())[0]
        order = np.lexsort((np.arange(len(server_cos)), -server_cos))
        chosen = np.zeros(len(server_cos), dtype=bool)
        chosen[order[:width]] = True
        scores = np.where(chosen[corpus.tool_server], dense_scores(ctx), -np.inf)
        return top(scores, depth)
