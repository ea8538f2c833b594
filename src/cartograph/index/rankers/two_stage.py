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
    """Server centroids first, then tools within the chosen servers.

    At scale (``ctx.prefilter_min_tools``) stage 2 computes cosines for the
    chosen servers' tools only (a few dozen rows instead of the whole
    matrix); below it the task's product over every tool is shared with
    discover's confidence, so it is reused.
    """

    name = "two-stage"

    def rank(self, ctx: QueryContext, depth: int, *, k: int) -> Ranking:
        corpus = ctx.corpus
        width = stage_one_width(len(corpus.servers), corpus.size, k)
        server_cos = corpus.server_similarities(ctx.whole_vector())[0]
        order = np.lexsort((np.arange(len(server_cos)), -server_cos))
        chosen = order[:width].astype(np.int64)
        limit = ctx.prefilter_min_tools
        if limit is not None and corpus.size >= limit:
            positions = corpus.tools_of(chosen)  # ascending: ties keep position order
            cosines = ctx.similarities_at(positions, steps=False)[0].astype(np.float64)
            return [(int(positions[i]), score) for i, score in top(cosines, depth)]
        mask = np.zeros(len(server_cos), dtype=bool)
        mask[chosen] = True
        scores = np.where(mask[corpus.tool_server], dense_scores(ctx), -np.inf)
        return top(scores, depth)
