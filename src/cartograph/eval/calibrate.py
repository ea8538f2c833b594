"""Calibrating discover's abstention threshold on labelled queries.

:func:`calibrate_on_sets` is what sets the shipped threshold: servable tasks
of several kinds (single-step and multi-step, each over its own catalog) and
written out-of-catalog tasks (``gold`` empty: nothing in the catalog can do
them) together, so the threshold neither fires on plainly answerable
single-step tasks nor only ever sees one kind of task.


There are rarely labelled "nothing fits" tasks, so they are made from the
labelled ones: for each query, its *positive* confidence is the best cosine
of the task (or a step) to any tool; its *negative* confidence is the same
with every tool of the query's gold servers removed, which is exactly the
situation "the catalog has nothing for this". The threshold is the midpoint
that keeps false abstentions on servable tasks within a budget (5 %).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

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
        keep = np.array([server not in gold_servers for server, _ in corpus.keys])
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


@dataclass(frozen=True)
class CalibrationSet:
    """Queries over one index: servable (with gold tools) or out of catalog (gold empty)."""

    name: str
    index: ToolIndex
    queries: Sequence[EvalQuery]


class AbstentionReport(BaseModel):
    """The chosen threshold and what it does on every set it was calibrated on."""

    threshold: float
    max_false_abstain: float
    false_abstain: dict[str, float]
    """Per servable set: share of its tasks the threshold abstains on (lower is better)."""
    true_abstain: dict[str, float]
    """Per out-of-catalog set: share of its tasks the threshold abstains on (higher is better)."""
    synthetic_true_abstain: dict[str, float]
    """Per servable set: share abstained on once its gold servers are removed."""


def task_confidences(index: ToolIndex, queries: Sequence[EvalQuery]) -> list[float]:
    """discover's confidence for each query: best cosine of the task or a step to any tool."""
    return [float(np.max(index.context(q.query).similarities())) for q in queries]


def calibrate_on_sets(
    servable: Sequence[CalibrationSet],
    out_of_catalog: Sequence[CalibrationSet],
    *,
    max_false_abstain: float = 0.02,
) -> AbstentionReport:
    """The highest threshold that abstains on at most ``max_false_abstain`` of *each* servable set.

    The budget holds per set, not only for the pooled mix: a threshold that
    is harmless on multi-step tasks (their best step is usually close to
    some tool) can still fire on short single-step ones, which is how the
    previous threshold, calibrated on multi-step tasks alone, cried wolf.
    The report gives each set's false rate and the true-abstention rate on
    the out-of-catalog sets and on synthetic "gold servers removed" negatives.
    """
    positives = {s.name: task_confidences(s.index, s.queries) for s in servable}
    threshold = min(
        (_budget_threshold(v, max_false_abstain) for v in positives.values() if v), default=0.0
    )
    negatives = {s.name: task_confidences(s.index, s.queries) for s in out_of_catalog}
    synthetic = {s.name: confidence_samples(s.index, s.queries)[1] for s in servable}
    return AbstentionReport(
        threshold=round(threshold, 4),
        max_false_abstain=max_false_abstain,
        false_abstain={k: _below(v, threshold) for k, v in positives.items()},
        true_abstain={k: _below(v, threshold) for k, v in negatives.items()},
        synthetic_true_abstain={k: _below(v, threshold) for k, v in synthetic.items()},
    )


def _budget_threshold(values: Sequence[float], budget: float) -> float:
    """The highest threshold with at most ``budget`` of ``values`` below it."""
    ordered = np.sort(np.array(values))
    return float(ordered[int(np.floor(budget * len(ordered)))])


def _below(values: Sequence[float], threshold: float) -> float:
    return round(float(np.mean(np.array(values) < threshold)), 4) if len(values) else 0.0
