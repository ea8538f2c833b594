"""``cartograph eval --learning``: learning from use, measured prequentially.

The queries are replayed once, in an order fixed by a seed. Each query is
ranked with the learner as it stands — built only from the feedback of the
queries before it — and scored; only then is its own feedback logged. So
every number is out-of-sample, and the learning curve (metric against the
number of tasks logged so far) shows how fast use pays off.

Feedback is simulated two ways, each with its own learner:

* **surfaced**: the agent calls the gold tools that appear in the top
  :data:`SURFACED_DEPTH` of what it was shown (it cannot call what it never
  saw), plus wrong calls that succeed anyway: each correct call brings a
  wrong one with probability ``noise / (1 - noise)`` (a task with no correct
  call gets one with probability ``noise``), so about ``noise`` of the
  logged successful calls are wrong; a wrong tool is drawn from the
  non-gold tools of the same top 20, the mistakes an agent would make.
* **oracle**: every gold tool is called, nothing else (an upper bound).

The zero-shot ranker is scored on the same queries in the same order; its
row is reported beside the learning rows, never mixed with them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Literal

import numpy as np
from pydantic import BaseModel

from cartograph import error_codes as codes
from cartograph.errors import OptionError
from cartograph.eval.data import EvalQuery
from cartograph.eval.harness import EVAL_K, MetricValue
from cartograph.eval.intervals import bootstrap_interval
from cartograph.eval.metrics import METRIC_NAMES, MRR_DEPTH, Judgement, query_metrics
from cartograph.index.embedders.base import Vectors
from cartograph.index.rankers.base import Ranking
from cartograph.index.tool_index import ToolIndex
from cartograph.learning.learner import Learner, LearningParams, blend, positions
from cartograph.learning.store import ToolKey

Mode = Literal["surfaced", "oracle"]
MODES: Final[tuple[Mode, ...]] = ("surfaced", "oracle")
ZERO_SHOT: Final = "zero-shot"
SURFACED_DEPTH: Final = 20
DEFAULT_NOISE: Final = 0.2
DEFAULT_SEED: Final = 0
CURVE_POINTS: Final = 10
CURVE_METRICS: Final = ("R@5", "Hit@5", "MRR")

Progress = Callable[[int, int], None]


class CurvePoint(BaseModel):
    """Mean metrics of the queries ranked with ``logged_from``..``logged_to`` tasks logged."""

    logged_from: int
    logged_to: int
    metrics: dict[str, dict[str, float]]


class PrequentialReport(BaseModel):
    queries: int
    tools: int
    embedder: str
    method: str
    seed: int
    noise: float
    rows: dict[str, dict[str, MetricValue]]
    curve: list[CurvePoint]
    new: int = 0
    """Queries whose gold set no earlier query had: learning should leave them alone."""
    repeated: int = 0
    """Queries whose gold set an earlier query had: where learning can pay."""
    split: dict[str, dict[str, dict[str, MetricValue]]] = {}
    """Per arm, ``new`` and ``repeated`` queries apart (either is absent when empty)."""


@dataclass
class _Arm:
    """One way of scoring the replay: zero-shot, or a learner fed one kind of feedback."""

    name: str
    learner: Learner | None
    scores: list[dict[str, float]]


@dataclass(frozen=True)
class Replay:
    """The zero-shot half of a replay, computed once: queries in order, rankings, vectors.

    Learning parameters can then be compared on the same replay for the cost
    of the learner alone (:func:`replay`).
    """

    index: ToolIndex
    method: str
    seed: int
    queries: tuple[EvalQuery, ...]
    rankings: tuple[Ranking, ...]
    vectors: Vectors


def zero_shot_pass(
    index: ToolIndex,
    queries: Sequence[EvalQuery],
    *,
    method: str | None = None,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
) -> Replay:
    """Rank every query zero-shot, in the seeded order, keeping each whole-task vector."""
    order = list(queries)
    random.Random(seed).shuffle(order)  # noqa: S311 - a reproducible order, not a secret
    depth = max(MRR_DEPTH, SURFACED_DEPTH)
    rankings: list[Ranking] = []
    dim = index.corpus.tool_vectors.shape[1]
    vectors = np.zeros((len(order), dim), dtype=np.float32)
    for number, q in enumerate(order):
        ctx = index.context(q.query)
        rankings.append(index.rank(ctx, EVAL_K, method=method, depth=depth))
        vectors[number] = ctx.whole_vector()
        if progress is not None:
            progress(number + 1, len(order))
    return Replay(
        index, method or index.default_method, seed, tuple(order), tuple(rankings), vectors
    )


def replay(
    run: Replay,
    *,
    params: LearningParams | None = None,
    modes: Sequence[Mode] = MODES,
    noise: float = DEFAULT_NOISE,
) -> PrequentialReport:
    """Score zero-shot and each feedback mode's learner over ``run`` (module docstring)."""
    params = params or LearningParams(capacity=max(len(run.queries), 1))
    rng = random.Random(run.seed + 1)  # noqa: S311
    keys = run.index.keys()
    where = positions(keys)
    dim = run.vectors.shape[1]
    arms = [_Arm(ZERO_SHOT, None, [])] + [_Arm(m, Learner(dim, params), []) for m in modes]
    for number, q in enumerate(run.queries):
        zero, vector, judgement = run.rankings[number], run.vectors[number], q.judgement()
        for arm in arms:
            ranked = zero
            if arm.learner is not None:
                learned = arm.learner.scores(vector, q.query)
                bonus = {where[key]: v for key, v in learned.items() if key in where}
                ranked = blend(
                    zero, bonus, EVAL_K, params.zero_shot_slots, params.first_place_margin
                )
            shown = [keys[i] for i, _ in ranked]
            arm.scores.append(query_metrics(shown, judgement))
            if arm.learner is not None:
                for tool in _feedback(arm.name, shown, judgement, noise, rng):
                    arm.learner.add(number, vector, q.query, tool)
    novel = _novel(run.queries)
    return PrequentialReport(
        queries=len(run.queries),
        tools=run.index.size,
        embedder=run.index.corpus.embedder.model_id,
        method=run.method,
        seed=run.seed,
        noise=noise,
        rows={arm.name: _row(arm.scores) for arm in arms},
        curve=_curve(arms, len(run.queries)),
        new=sum(novel),
        repeated=len(novel) - sum(novel),
        split={arm.name: _split(arm.scores, novel) for arm in arms},
    )


def _novel(queries: Sequence[EvalQuery]) -> list[bool]:
    """Whether each query, in replay order, is new: no earlier query had its gold set."""
    seen: set[frozenset[tuple[str, str]]] = set()
    novel: list[bool] = []
    for q in queries:
        gold = q.judgement().gold
        novel.append(gold not in seen)
        seen.add(gold)
    return novel


def _split(scores: list[dict[str, float]], novel: list[bool]) -> dict[str, dict[str, MetricValue]]:
    parts = {
        "new": [s for s, n in zip(scores, novel, strict=True) if n],
        "repeated": [s for s, n in zip(scores, novel, strict=True) if not n],
    }
    return {name: _row(part) for name, part in parts.items() if part}


def prequential(
    index: ToolIndex,
    queries: Sequence[EvalQuery],
    *,
    method: str | None = None,
    params: LearningParams | None = None,
    modes: Sequence[Mode] = MODES,
    noise: float = DEFAULT_NOISE,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
) -> PrequentialReport:
    """Replay ``queries`` in a seeded order, learning only from earlier ones (module doc)."""
    run = zero_shot_pass(index, queries, method=method, seed=seed, progress=progress)
    return replay(run, params=params, modes=modes, noise=noise)


def _feedback(
    mode: str, shown: list[ToolKey], judgement: Judgement, noise: float, rng: random.Random
) -> list[ToolKey]:
    """The tools the simulated agent called successfully (module docstring)."""
    if mode == "oracle":
        return sorted(judgement.gold)
    seen = shown[:SURFACED_DEPTH]
    correct = [key for key in seen if key in judgement.gold]
    wrong_pool = [key for key in seen if key not in judgement.gold]
    chance = noise / (1.0 - noise) if noise < 1.0 else 1.0
    draws = (
        sum(1 for _ in correct if rng.random() < chance) if correct else int(rng.random() < noise)
    )
    wrong = rng.sample(wrong_pool, min(draws, len(wrong_pool)))
    return correct + wrong


def _row(scores: list[dict[str, float]]) -> dict[str, MetricValue]:
    return {name: _summary([s[name] for s in scores]) for name in METRIC_NAMES}


def _summary(values: list[float]) -> MetricValue:
    low, high = bootstrap_interval(values)
    mean = sum(values) / len(values) if values else 0.0
    return MetricValue(mean=round(mean, 4), low=round(low, 4), high=round(high, 4))


def _curve(arms: list[_Arm], total: int) -> list[CurvePoint]:
    """Metric means per window of the replay: how each arm does as the log grows."""
    points: list[CurvePoint] = []
    size = max(1, -(-total // CURVE_POINTS))
    for start in range(0, total, size):
        end = min(total, start + size)
        metrics = {
            arm.name: {
                name: round(sum(s[name] for s in arm.scores[start:end]) / (end - start), 4)
                for name in CURVE_METRICS
            }
            for arm in arms
        }
        points.append(CurvePoint(logged_from=start, logged_to=end - 1, metrics=metrics))
    return points


def run_learning_eval(
    catalog_path: Path,
    queries_path: Path,
    *,
    method: str | None = None,
    embedder: str | None = None,
    modes: Sequence[Mode] = MODES,
    noise: float = DEFAULT_NOISE,
    seed: int = DEFAULT_SEED,
    limit: int | None = None,
    progress: Progress | None = None,
) -> PrequentialReport:
    """``cartograph eval --learning``: template cards, the shipped learning defaults."""
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.config.model import LearningConfig
    from cartograph.eval.data import load_queries
    from cartograph.index.embedders import get_embedder

    if not 0.0 <= noise < 1.0:
        raise OptionError(f"--noise must be in [0, 1), got {noise}", code=codes.BAD_NOISE)
    queries = load_queries(queries_path)
    if limit is not None:  # a seeded sample, then the seeded replay order
        random.Random(seed).shuffle(queries)  # noqa: S311
        queries = queries[:limit]
    index = ToolIndex.build(
        attest_with_unsafe_throwaway_key(load_catalog(catalog_path)),
        get_embedder(embedder or "minilm"),
    )
    shipped = LearningParams.from_config(LearningConfig())
    params = replace(shipped, capacity=max(shipped.capacity, len(queries)))
    run = zero_shot_pass(index, queries, method=method, seed=seed, progress=progress)
    return replay(run, params=params, modes=modes, noise=noise)
