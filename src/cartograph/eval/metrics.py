"""Retrieval metrics, named exactly as ``bench/README.md`` defines them.

Every metric is a per-query value in [0, 1] averaged over queries, so the
bootstrap can resample queries. ``expected_random`` gives the exact
expectation of each metric under a uniformly random order (the paper reports
random as expected values, not as one unlucky draw).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cartograph.index.entries import ToolKey

MRR_DEPTH: Final = 100
METRIC_NAMES: Final = (
    "R@1",
    "R@3",
    "R@5",
    "G@5",
    "Hit@1",
    "Hit@3",
    "Hit@5",
    "MRR",
    "nDCG@5",
    "nDCG@10",
    "SrvR@5",
)


@dataclass(frozen=True)
class Judgement:
    """What counts as correct for one query."""

    gold: frozenset[ToolKey]
    groups: tuple[frozenset[ToolKey], ...]

    @property
    def gold_servers(self) -> frozenset[str]:
        return frozenset(server for server, _ in self.gold)


def query_metrics(ranked: Sequence[ToolKey], judgement: Judgement) -> dict[str, float]:
    """Every metric of :data:`METRIC_NAMES` for one ranked list (best first)."""
    gold = judgement.gold
    out: dict[str, float] = {}
    for k in (1, 3, 5):
        hits = set(ranked[:k]) & gold
        out[f"R@{k}"] = len(hits) / len(gold) if gold else 0.0
        out[f"Hit@{k}"] = 1.0 if hits else 0.0
    top5 = set(ranked[:5])
    groups = judgement.groups
    out["G@5"] = sum(1 for g in groups if g & top5) / len(groups) if groups else 0.0
    out["MRR"] = next(
        (1.0 / (i + 1) for i, key in enumerate(ranked[:MRR_DEPTH]) if key in gold), 0.0
    )
    for k in (5, 10):
        out[f"nDCG@{k}"] = ndcg(ranked, gold, k)
    servers = {server for server, _ in ranked[:5]}
    gold_servers = judgement.gold_servers
    out["SrvR@5"] = len(servers & gold_servers) / len(gold_servers) if gold_servers else 0.0
    return {name: out[name] for name in METRIC_NAMES}


def ndcg(ranked: Sequence[ToolKey], gold: frozenset[ToolKey], k: int) -> float:
    """Binary-relevance nDCG@k."""
    dcg = sum(1.0 / math.log2(i + 2) for i, key in enumerate(ranked[:k]) if key in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / ideal if ideal else 0.0


def expected_random(judgement: Judgement, catalog: Sequence[ToolKey]) -> dict[str, float]:
    """Exact expected metrics under a uniformly random order of ``catalog``."""
    n = len(catalog)
    gold = judgement.gold & set(catalog)
    g = len(gold)
    out: dict[str, float] = {}
    for k in (1, 3, 5):
        out[f"R@{k}"] = (g * _p_in_top(n, 1, k) / len(judgement.gold)) if judgement.gold else 0.0
        out[f"Hit@{k}"] = _p_in_top(n, g, k)
    groups = judgement.groups
    out["G@5"] = (
        sum(_p_in_top(n, len(grp & gold), 5) for grp in groups) / len(groups) if groups else 0.0
    )
    out["MRR"] = sum(_p_first_at(n, g, r) / r for r in range(1, min(MRR_DEPTH, n) + 1))
    for k in (5, 10):
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(judgement.gold))))
        dcg = sum((g / n) / math.log2(r + 1) for r in range(1, min(k, n) + 1)) if n else 0.0
        out[f"nDCG@{k}"] = dcg / ideal if ideal else 0.0
    sizes: dict[str, int] = {}
    for server, _ in catalog:
        sizes[server] = sizes.get(server, 0) + 1
    servers = judgement.gold_servers
    out["SrvR@5"] = (
        sum(_p_in_top(n, sizes.get(s, 0), 5) for s in servers) / len(servers) if servers else 0.0
    )
    return {name: out[name] for name in METRIC_NAMES}


def _p_in_top(n: int, members: int, k: int) -> float:
    """P(at least one of ``members`` specific items lands in the top k of n)."""
    if members <= 0 or n <= 0:
        return 0.0
    k = min(k, n)
    return 1.0 - math.comb(n - members, k) / math.comb(n, k)


def _p_first_at(n: int, g: int, r: int) -> float:
    """P(the first of g specific items is at rank r) in a random order of n."""
    if g <= 0 or r > n - g + 1:
        return 0.0
    return math.comb(n - r, g - 1) / math.comb(n, g)
