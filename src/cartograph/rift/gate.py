"""A Rift baseline: today's clusters recorded, so a CI gate fails only on what is new.

Like a linter's baseline, ``rift --baseline rift-baseline.json`` records the
clusters a federation has now (member keys and risk). With a baseline,
``--fail-on`` fails only on a cluster that is *new* — not contained in any
recorded cluster — or whose risk *rose* above the recorded one. A cluster
that shrank or whose risk fell passes. ``--update-baseline`` rewrites the file
(atomically) once the operator accepts the current state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from cartograph import error_codes as codes
from cartograph.errors import ConfigError
from cartograph.fsutil import atomic_write_text
from cartograph.rift.model import RISK_ORDER, Cluster, RiftReport, Risk

BASELINE_VERSION: Final = 1
MAX_BASELINE_BYTES: Final = 16 * 1024 * 1024


class BaselineCluster(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    members: tuple[str, ...]
    risk: Risk


class Baseline(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = BASELINE_VERSION
    tools: int = 0
    clusters: tuple[BaselineCluster, ...] = ()

    @classmethod
    def of(cls, report: RiftReport) -> Baseline:
        return cls(
            tools=report.tools,
            clusters=tuple(
                BaselineCluster(members=tuple(sorted(c.keys)), risk=c.risk) for c in report.clusters
            ),
        )


@dataclass(frozen=True)
class Finding:
    """A cluster the gate fails on: new, or its risk rose."""

    cluster: Cluster
    kind: Literal["new", "risen"]
    was: Risk | None = None
    added: tuple[str, ...] = ()
    """Members no recorded cluster holds together with the others."""

    def line(self) -> str:
        members = ", ".join(sorted(self.cluster.keys))
        if self.kind == "risen":
            return (
                f"risk rose {self.was} → {self.cluster.risk}: cluster {self.cluster.id} ({members})"
            )
        extra = f"; new in it: {', '.join(self.added)}" if self.added else ""
        return f"new {self.cluster.risk} cluster {self.cluster.id}: {members}{extra}"


def load_baseline(path: Path) -> Baseline:
    """Read a baseline; a malformed one is a coded error naming the fix."""
    try:
        if path.stat().st_size > MAX_BASELINE_BYTES:
            raise ConfigError(
                f"{path} is larger than a Rift baseline can be", code=codes.RIFT_BAD_BASELINE
            )
        return Baseline.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError) as exc:
        raise ConfigError(
            f"cannot read the Rift baseline {path}: {exc.__class__.__name__}; delete it and run "
            "`cartograph rift --baseline FILE --update-baseline` to record a new one",
            code=codes.RIFT_BAD_BASELINE,
        ) from exc


def write_baseline(report: RiftReport, path: Path) -> Baseline:
    """Record ``report``'s clusters at ``path`` (atomic write)."""
    baseline = Baseline.of(report)
    body = json.dumps(baseline.model_dump(mode="json"), indent=1, ensure_ascii=False)
    atomic_write_text(path, body + "\n")
    return baseline


def compare(report: RiftReport, baseline: Baseline, level: Risk) -> list[Finding]:
    """Clusters at ``level`` or worse that are new or whose risk rose since ``baseline``."""
    recorded = [(frozenset(b.members), b.risk) for b in baseline.clusters]
    findings: list[Finding] = []
    limit = RISK_ORDER[level]
    for c in report.clusters:
        if RISK_ORDER[c.risk] > limit:
            continue
        finding = _judge(c, recorded)
        if finding is not None:
            findings.append(finding)
    return findings


def _judge(c: Cluster, recorded: Sequence[tuple[frozenset[str], Risk]]) -> Finding | None:
    homes = [risk for members, risk in recorded if c.keys <= members]
    if not homes:
        best = max(recorded, key=lambda r: len(r[0] & c.keys), default=(frozenset(), "LOW"))
        return Finding(c, "new", added=tuple(sorted(c.keys - best[0])))
    was = min(homes, key=lambda r: RISK_ORDER[r])  # the worst recorded risk is the bar
    if RISK_ORDER[c.risk] < RISK_ORDER[was]:
        return Finding(c, "risen", was=was)
    return None


__all__ = [
    "BASELINE_VERSION",
    "Baseline",
    "BaselineCluster",
    "Finding",
    "compare",
    "load_baseline",
    "write_baseline",
]
