"""The hybrid's head re-scoring (:mod:`cartograph.index.rankers.contrast`), measured and off."""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.rankers import DEFAULT_PARAMS, HybridRanker
from cartograph.index.rankers.contrast import head_contrast, rescore_head
from cartograph.index.tool_index import ToolIndex

from .retrieval_fixtures import small_catalog

fit_script: Any = importlib.import_module("benchmarks.fit_head_rescore")


def _unit(v: list[float]) -> np.ndarray:
    a = np.array(v, dtype=np.float64)
    return a / np.linalg.norm(a)


# Two siblings that share most of their vector (the first axis) and differ on
# the second and third; the task leans a little towards the second sibling's
# own direction while the first has the higher plain cosine.
SIBLING_A = _unit([1.0, 0.3, 0.0])
SIBLING_B = _unit([1.0, 0.0, 0.25])
TASK = _unit([1.0, 0.05, 0.12])


def test_contrast_points_at_what_differs_between_the_candidates() -> None:
    rows = np.stack([SIBLING_A, SIBLING_B])
    plain = rows @ TASK
    contrast = head_contrast(TASK, rows)
    assert plain[0] > plain[1] - 0.05  # nearly tied on the plain cosine
    assert contrast[1] > 0 > contrast[0]  # the task goes B's own way
    assert np.allclose(contrast, -contrast[::-1])  # two candidates: opposite signs


def test_a_lone_candidate_or_a_task_at_the_mean_has_no_contrast() -> None:
    assert head_contrast(TASK, SIBLING_A[None, :]).tolist() == [0.0]
    rows = np.stack([SIBLING_A, SIBLING_B])
    assert np.allclose(head_contrast(rows.mean(axis=0), rows), 0.0)


def test_rescoring_reorders_the_head_and_leaves_the_rest() -> None:
    vectors = np.stack([SIBLING_A, SIBLING_B, _unit([0.0, 1.0, 0.0])])
    ranked = [(0, 1.00), (1, 0.99), (2, 0.50)]
    out = rescore_head(ranked, TASK, vectors, head=2, dense_weight=0.0, contrast_weight=0.3)
    assert [i for i, _ in out] == [1, 0, 2]
    assert out[2] == (2, 0.50)
    off = rescore_head(ranked, TASK, vectors, head=2, dense_weight=0.0, contrast_weight=0.0)
    assert off == ranked


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())


TASKS = (
    "weather forecast alerts for my city",
    "read the text file from disk",
    "write a file then send the alerts",
)


def test_the_hybrid_orders_its_head_by_the_rescoring(index: ToolIndex) -> None:
    """A large contrast weight makes the head's order the contrast's: the step is applied."""
    strong = HybridRanker(replace(DEFAULT_PARAMS, head_dense=0.0, head_contrast=50.0))
    off = HybridRanker(replace(DEFAULT_PARAMS, head_dense=0.0, head_contrast=0.0))
    changed = 0
    for task in TASKS:
        before = off.rank(index.context(task), index.size, k=5)
        head = [i for i, _ in before[: DEFAULT_PARAMS.head_size]]
        ctx = index.context(task)
        rows = np.asarray(index.corpus.tool_vectors[head], dtype=np.float64)
        contrast = head_contrast(ctx.whole_vector(), rows)
        expected = [head[j] for j in np.argsort(-contrast, kind="stable")]
        after = [i for i, _ in strong.rank(ctx, index.size, k=5)][: len(head)]
        assert after == expected
        changed += after != head
    assert changed  # the test would pass vacuously if no order moved


def test_the_first_tools_do_not_depend_on_how_deep_the_caller_looks(index: ToolIndex) -> None:
    ranker = HybridRanker(replace(DEFAULT_PARAMS, head_contrast=50.0))
    for task in TASKS:
        deep = ranker.rank(index.context(task), index.size, k=5)
        for depth in (1, 2, 3):
            assert ranker.rank(index.context(task), depth, k=depth) == deep[:depth]


def test_the_defaults_leave_the_fused_order_alone(index: ToolIndex) -> None:
    """Off by default (measured, not shipped): the hybrid's ranking is the fused one."""
    assert (DEFAULT_PARAMS.head_dense, DEFAULT_PARAMS.head_contrast) == (0.0, 0.0)
    shipped = HybridRanker()
    fused = HybridRanker(replace(DEFAULT_PARAMS, head_size=0))
    for task in TASKS:
        ctx = index.context(task)
        assert shipped.rank(ctx, index.size, k=5) == fused.rank(ctx, index.size, k=5)


def test_the_fit_learns_the_feature_that_picks_the_right_tool() -> None:
    """The script's conditional logit: the right tool is the one the contrast column favours."""
    rng = np.random.default_rng(0)
    xs, ys = [], []
    for _ in range(300):
        x = rng.normal(size=(5, 3)) * [0.02, 0.02, 1.0]
        right = np.zeros(5, dtype=bool)
        right[int(np.argmax(x[:, 2] + rng.normal(scale=0.3, size=5)))] = True
        xs.append(x)
        ys.append(right)
    w = fit_script.fit(xs, ys, 1e-3)
    assert w[2] > 1.0
    assert fit_script.hit_at_1(xs, ys, w) > fit_script.hit_at_1(xs, ys, np.array([1.0, 0, 0]))
