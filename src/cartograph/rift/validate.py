"""Rift's risk levels against confusion observed on real queries.

A *confusion* is a query whose gold tool ``g`` is a member of a cluster while
another member ``b`` of that cluster — not itself gold for the query — ranks
above ``g`` in the retriever's ranking. That is the failure Rift predicts: an
agent asking for ``g`` is shown ``b`` first.

* precision of HIGH: the share of HIGH clusters with at least one observed
  confusion (and, separately, among the HIGH clusters the queries *cover*, i.e.
  whose members are gold for at least one query — an uncovered cluster can
  neither confirm nor refute its label);
* recall of HIGH + MEDIUM: the share of observed confusions inside clusters
  rated HIGH or MEDIUM.

The rankings come from the caller (``benchmarks/rift_validation.py`` ranks
with the served index), so this module stays a pure function of its inputs
and is tested with constructed rankings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cartograph.rift.model import Cluster, RiftReport, Risk


@dataclass(frozen=True)
class LabelledQuery:
    """One query's id, its gold tools (``server/tool``) and its ranking, best first."""

    id: str
    gold: frozenset[str]
    ranking: Sequence[str]


@dataclass(frozen=True)
class Confusion:
    query: str
    gold: str
    rival: str
    cluster: int
    risk: Risk


@dataclass(frozen=True)
class Validation:
    """Counts behind precision and recall; ratios are properties so they cannot drift."""

    clusters: int
    high: int
    medium: int
    high_covered: int
    high_confused: int
    confusions: int
    flagged: int
    confused_clusters: int

    @property
    def precision(self) -> float | None:
        """Observed-confusion precision of HIGH over every HIGH cluster."""
        return self.high_confused / self.high if self.high else None

    @property
    def precision_covered(self) -> float | None:
        """The same over HIGH clusters the queries can test."""
        return self.high_confused / self.high_covered if self.high_covered else None

    @property
    def recall(self) -> float | None:
        """Share of observed confusions inside HIGH or MEDIUM clusters."""
        return self.flagged / self.confusions if self.confusions else None


def confusions_in(clusters: Iterable[Cluster], queries: Iterable[LabelledQuery]) -> list[Confusion]:
    """Every (query, gold tool, cluster) where another non-gold member ranks above the gold."""
    where: dict[str, list[Cluster]] = {}
    for c in clusters:
        for m in c.members:
            where.setdefault(m.key, []).append(c)
    found: list[Confusion] = []
    for q in queries:
        position = {key: k for k, key in enumerate(q.ranking)}
        for gold in sorted(q.gold):
            for c in where.get(gold, ()):
                rival = _rival_above(c, gold, q.gold, position)
                if rival is not None:
                    found.append(Confusion(q.id, gold, rival, c.id, c.risk))
    return found


def _rival_above(
    c: Cluster, gold: str, golds: frozenset[str], position: Mapping[str, int]
) -> str | None:
    mine = position.get(gold, len(position))
    above = [
        (position[m.key], m.key)
        for m in c.members
        if m.key != gold and m.key not in golds and position.get(m.key, mine) < mine
    ]
    return min(above)[1] if above else None


def covered(clusters: Iterable[Cluster], queries: Iterable[LabelledQuery]) -> set[int]:
    """Ids of clusters with at least one member that is gold for some query."""
    golds = {g for q in queries for g in q.gold}
    return {c.id for c in clusters if any(m.key in golds for m in c.members)}


def validate(report: RiftReport, queries: Sequence[LabelledQuery]) -> Validation:
    """Precision and recall of ``report``'s risk labels against ``queries``."""
    found = confusions_in(report.clusters, queries)
    confused = {f.cluster for f in found}
    tested = covered(report.clusters, queries)
    high = report.by_risk("HIGH")
    return Validation(
        clusters=len(report.clusters),
        high=len(high),
        medium=len(report.by_risk("MEDIUM")),
        high_covered=sum(c.id in tested for c in high),
        high_confused=sum(c.id in confused for c in high),
        confusions=len(found),
        flagged=sum(f.risk in ("HIGH", "MEDIUM") for f in found),
        confused_clusters=len(confused),
    )


__all__ = [
    "Confusion",
    "LabelledQuery",
    "Validation",
    "confusions_in",
    "covered",
    "validate",
]
