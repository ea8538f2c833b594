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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from cartograph.eval.data import EvalQuery
from cartograph.index.embedders.base import Vectors
from cartograph.index.open_world import coverage, margin
from cartograph.index.tool_index import ToolIndex

IntArray = npt.NDArray[np.int64]


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


# -- the open-world rule (index/open_world.py) and held-out comparison --------

DELTA_GRID: Final = tuple(round(d, 4) for d in np.arange(-0.1, 0.3001, 0.0125))
"""Candidate deltas: how much better a background tool must fit than ours."""
THRESHOLD_GRID: Final = tuple(round(t, 4) for t in np.arange(0.1, 0.4001, 0.005))
"""Candidate cosine thresholds when the cosine is one half of a pair (:func:`either_rule`)."""

Decisions = dict[str, npt.NDArray[np.bool_]]
"""Per set name: whether the rule abstains on each of its queries (in order)."""


Param = TypeVar("Param", float, tuple[float, float])
RuleParam = float | tuple[float, float]
"""A rule's parameter: a threshold or delta, or a (threshold, delta) pair."""


@dataclass(frozen=True)
class RuleSets(Generic[Param]):
    """Abstention decisions of one rule over every set, for each candidate parameter.

    Set names: servable sets by name, out-of-catalog sets by name, and each
    servable set with its gold servers removed as ``"<name> (gold removed)"``.
    """

    params: tuple[Param, ...]
    decide: Callable[[Param], Decisions]
    servable: tuple[str, ...]
    out_of_catalog: tuple[str, ...]

    @property
    def synthetic(self) -> tuple[str, ...]:
        return tuple(f"{name}{REMOVED}" for name in self.servable)


REMOVED: Final = " (gold removed)"


class RuleReport(BaseModel):
    """One rule's parameter and its abstention rate on every set (in-sample or held out)."""

    param: RuleParam
    rates: dict[str, float]


def cosine_rule(
    servable: Sequence[CalibrationSet], ooc: Sequence[CalibrationSet]
) -> RuleSets[float]:
    """The raw-cosine rule: abstain when the best cosine is below a threshold."""
    values: dict[str, npt.NDArray[np.float64]] = {}
    for s in servable:
        values[s.name] = np.array(task_confidences(s.index, s.queries))
        values[f"{s.name}{REMOVED}"] = np.array(_removed_confidences(s.index, s.queries))
    for s in ooc:
        values[s.name] = np.array(task_confidences(s.index, s.queries))
    grid = np.unique(np.concatenate([values[s.name] for s in servable] + [np.zeros(1)]))
    return RuleSets(
        params=tuple(float(t) for t in grid),
        decide=lambda t: {name: v < t for name, v in values.items()},
        servable=tuple(s.name for s in servable),
        out_of_catalog=tuple(s.name for s in ooc),
    )


def open_world_rule(
    servable: Sequence[CalibrationSet],
    ooc: Sequence[CalibrationSet],
    deltas: Sequence[float] = DELTA_GRID,
) -> RuleSets[float]:
    """The open-world rule: abstain when a background tool fits better than ours by ``delta``.

    The margins do not depend on ``delta`` (the mask does not either), so each
    query's margin is computed once.

    With the gold servers removed, the background mask is recomputed from the
    remaining tools: that catalog is what "nothing here fits" looks like.
    """
    margins: dict[str, npt.NDArray[np.float64]] = {}
    for s in servable:
        margins[s.name] = _open_world_margins(s.index, s.queries, without_gold=False)
        margins[f"{s.name}{REMOVED}"] = _open_world_margins(s.index, s.queries, without_gold=True)
    for s in ooc:
        margins[s.name] = _open_world_margins(s.index, s.queries, without_gold=False)

    def decide(delta: float) -> Decisions:
        return {name: v < -delta for name, v in margins.items()}

    return RuleSets(
        params=tuple(deltas),
        decide=decide,
        servable=tuple(s.name for s in servable),
        out_of_catalog=tuple(s.name for s in ooc),
    )


def either_rule(
    cosine: RuleSets[float],
    open_world: RuleSets[float],
    thresholds: Sequence[float] = THRESHOLD_GRID,
) -> RuleSets[tuple[float, float]]:
    """Abstain when the best cosine is below a threshold *or* the open-world margin below -delta.

    Each half misses what the other catches: the cosine, tasks no tool comes
    near at all; the open world, tasks near a tool of ours that some tool
    elsewhere fits clearly better. Parameters are (threshold, delta) pairs,
    fitted together under one false budget. Both rules must be over the same sets.
    """

    def decide(pair: tuple[float, float]) -> Decisions:
        low, outside = cosine.decide(pair[0]), open_world.decide(pair[1])
        return {name: low[name] | outside[name] for name in low}

    return RuleSets(
        params=tuple((t, d) for t in thresholds for d in open_world.params),
        decide=decide,
        servable=cosine.servable,
        out_of_catalog=cosine.out_of_catalog,
    )


def fit_rule(
    rule: RuleSets[Param],
    max_false_abstain: float = 0.02,
    subset: Mapping[str, IntArray] | None = None,
) -> RuleReport:
    """The parameter that catches the most out-of-catalog tasks within the false budget.

    The budget holds on *each* servable set (as :func:`calibrate_on_sets`);
    ties go to the higher true rate with gold servers removed. ``subset``:
    only these query positions per set (cross-validation's training folds).
    """
    best: tuple[tuple[float, float], Param, dict[str, float]] | None = None
    for param in rule.params:
        decided = _restrict(rule.decide(param), subset)
        if any(
            decided[name].sum() > np.floor(max_false_abstain * len(decided[name]))
            for name in rule.servable
        ):
            continue
        rates = {name: float(v.mean()) if len(v) else 0.0 for name, v in decided.items()}
        key = (
            float(np.mean([rates[n] for n in rule.out_of_catalog])),
            float(np.mean([rates[n] for n in rule.synthetic])),
        )
        if best is None or key > best[0]:
            best = (key, param, rates)
    if best is None:  # nothing meets the budget: never abstain
        return RuleReport(param=float("nan"), rates={})
    return RuleReport(param=best[1], rates={k: round(v, 4) for k, v in best[2].items()})


def cross_validate(
    rule: RuleSets[float], *, folds: int = 5, seed: int = 0, max_false_abstain: float = 0.02
) -> tuple[list[float], dict[str, float]]:
    """(parameter per fold, held-out abstention rate per set): each fold fitted on the rest.

    Queries are split per set; a servable set and its gold-removed copy share
    folds (same queries), so a held-out query is never seen in either form.
    """
    decided = rule.decide(rule.params[0])
    rng = np.random.default_rng(seed)
    fold_of: dict[str, IntArray] = {}
    for name in (*rule.servable, *rule.out_of_catalog):
        fold_of[name] = rng.permutation(len(decided[name])) % folds
    for name in rule.servable:
        fold_of[f"{name}{REMOVED}"] = fold_of[name]
    held: dict[str, list[bool]] = {name: [] for name in decided}
    params: list[float] = []
    for f in range(folds):
        train = {n: np.flatnonzero(fold_of[n] != f) for n in decided}
        test = {n: np.flatnonzero(fold_of[n] == f) for n in decided}
        fitted = fit_rule(rule, max_false_abstain, train)
        param = fitted.param if isinstance(fitted.param, float) else float("nan")
        params.append(param)
        if np.isnan(param):
            continue
        for name, v in _restrict(rule.decide(param), test).items():
            held[name].extend(bool(x) for x in v)
    return params, {n: round(float(np.mean(v)), 4) if v else 0.0 for n, v in held.items()}


def _restrict(decided: Decisions, subset: Mapping[str, IntArray] | None) -> Decisions:
    if subset is None:
        return decided
    return {name: v[subset[name]] for name, v in decided.items()}


def _removed_confidences(index: ToolIndex, queries: Sequence[EvalQuery]) -> list[float]:
    """Best cosine per query with its gold servers' tools removed (-1 if nothing is left)."""
    out = []
    for q in queries:
        sims = index.context(q.query).similarities().max(axis=0)
        keep = _kept_tools(index, q)
        out.append(float(sims[keep].max()) if keep.any() else -1.0)
    return out


def _kept_tools(index: ToolIndex, q: EvalQuery) -> npt.NDArray[np.bool_]:
    gold_servers = q.judgement().gold_servers if q.gold else frozenset()
    return np.array([server not in gold_servers for server, _ in index.corpus.keys])


def _open_world_margins(
    index: ToolIndex, queries: Sequence[EvalQuery], *, without_gold: bool
) -> npt.NDArray[np.float64]:
    """Each query's open-world margin; ``without_gold``: in the catalog minus its gold servers.

    The background mask is recomputed from the remaining tools: that catalog
    is what "nothing here fits" looks like.
    """
    background = index.open_world().background
    task_sims = index.corpus.tool_similarities(background.tasks)
    by_removed: dict[bytes, Vectors] = {}
    out = []
    for q in queries:
        ctx = index.context(q.query)
        sims = ctx.similarities()
        keep = _kept_tools(index, q) if without_gold else np.ones(index.size, dtype=bool)
        token = np.packbits(keep).tobytes()
        if token not in by_removed:
            ours = task_sims[:, keep].max(axis=1) if keep.any() else np.full(len(task_sims), -1.0)
            by_removed[token] = coverage(background, ours)
        ours = sims[:, keep].max(axis=1) if keep.any() else np.full(len(sims), -1.0)
        out.append(margin(background, by_removed[token], ctx.vectors(), ours))
    return np.array(out)
