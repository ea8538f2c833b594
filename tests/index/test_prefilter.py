"""The hybrid's candidate prefilter at scale: one dense product over candidates only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.index.corpus import SAMPLE_TOOLS, spread_sample
from cartograph.index.discover import discover
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.index.rankers import hybrid
from cartograph.index.tool_index import ToolIndex
from cartograph.index.vector_store import VectorStore
from tests.cards.support import small_catalog
from tests.index.retrieval_fixtures import small_catalog as retrieval_catalog

TASKS = (
    "read a file",
    "write text to a file, then list the folder",
    "what time is it in Tokyo",
    "get the weather forecast and then save it to a file",
)


@pytest.fixture
def index(tmp_path: Path) -> ToolIndex:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    return ToolIndex.build(cards, FakeEmbedder(), store=VectorStore(tmp_path))


def exact_and_prefiltered(index: ToolIndex, task: str) -> tuple[list[int], list[int]]:
    index.prefilter_min_tools = None
    exact = [i for i, _ in index.rank(task, 5, depth=index.size)]
    index.prefilter_min_tools = 1  # every index is "large"
    fast = [i for i, _ in index.rank(task, 5, depth=index.size)]
    return exact, fast


def test_when_every_tool_is_a_candidate_the_prefiltered_hybrid_ranks_exactly(
    index: ToolIndex,
) -> None:
    # The small catalog has fewer servers than the server stage keeps: every
    # tool is a candidate, so the restricted scoring must reproduce the exact one.
    for task in TASKS:
        exact, fast = exact_and_prefiltered(index, task)
        assert fast == exact, task


def test_only_candidates_are_scored_densely_and_ranked(
    index: ToolIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hybrid, "PREFILTER_SERVERS", 1)
    monkeypatch.setattr(hybrid, "PREFILTER_LEXICAL", 1)
    monkeypatch.setattr(hybrid, "PREFILTER_SAMPLE", 1)
    index.prefilter_min_tools = 1
    ctx = index.context(TASKS[1])

    ranked = index.rank(ctx, 5, depth=index.size)

    dense = ctx._candidate_sims
    assert dense is not None and ctx._similarities is None  # no pass over every tool
    assert len(ranked) == dense.shape[1] < index.size
    assert dense.shape[0] == len(ctx.query.clauses) + 1  # task and steps in one product


def test_discover_confidence_comes_from_the_candidates_product(index: ToolIndex) -> None:
    cards_free_task = TASKS[0]
    index.prefilter_min_tools = None
    exact = index.context(cards_free_task).best_similarity()
    index.prefilter_min_tools = 1
    ctx = index.context(cards_free_task)
    index.rank(ctx, 5)

    assert ctx.best_similarity() == pytest.approx(exact, abs=1e-6)


def test_discover_answers_the_same_tools_with_and_without_the_prefilter(
    tmp_path: Path,
) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    index = ToolIndex.build(cards, FakeEmbedder(), store=VectorStore(tmp_path))
    index.prefilter_min_tools = None
    exact = discover(index, cards, TASKS[3])
    index.prefilter_min_tools = 1

    fast = discover(index, cards, TASKS[3])

    assert [(t.server, t.tool) for t in fast.tools] == [(t.server, t.tool) for t in exact.tools]
    assert fast.confidence == exact.confidence


def test_a_large_matrix_is_served_as_float16_and_scored_in_chunks() -> None:
    from cartograph.index.corpus import _similarities, serving_matrix

    rng = np.random.default_rng(3)
    rows = rng.standard_normal((20_500, 8)).astype(np.float16).astype(np.float32)
    queries = rng.standard_normal((2, 8)).astype(np.float32)

    served = serving_matrix(rows)

    assert served.dtype == np.float16
    assert np.allclose(_similarities(queries, served), queries @ rows.T, atol=1e-4)


def test_two_stage_at_scale_scores_only_the_chosen_servers_tools(tmp_path: Path) -> None:
    # 3 servers, 6 tools, k=1: stage 1 keeps 2 servers (test_rankers.py).
    cards = attest_with_unsafe_throwaway_key(retrieval_catalog())
    index = ToolIndex.build(cards, FakeEmbedder(), store=VectorStore(tmp_path))
    task = "weather forecast alerts for my city"
    index.prefilter_min_tools = None
    exact = index.rank(task, 1, method="two-stage", depth=index.size)
    index.prefilter_min_tools = 1  # every index is "large"
    ctx = index.context(task)

    fast = index.rank(ctx, 1, method="two-stage", depth=index.size)

    scored = ctx._candidate_sims
    assert scored is not None and ctx._similarities is None and ctx._whole_sims is None
    chosen = {index.corpus.key(i)[0] for i, _ in exact}
    chosen_tools = [i for i in range(index.size) if index.corpus.key(i)[0] in chosen]
    assert scored.shape == (1, len(chosen_tools)) and len(chosen_tools) < index.size
    assert [i for i, _ in fast] == [i for i, _ in exact]
    assert [s for _, s in fast] == pytest.approx([s for _, s in exact], abs=1e-6)


def test_the_blocked_product_is_the_matrix_product() -> None:
    from cartograph.index.corpus import PRODUCT_BLOCK, matrix_product

    rng = np.random.default_rng(5)
    queries = rng.standard_normal((3, 16)).astype(np.float32)
    rows = rng.standard_normal((PRODUCT_BLOCK // 48 * 3 + 7, 16)).astype(np.float32)  # 4 blocks

    got = matrix_product(queries, rows)

    assert got.shape == (3, len(rows)) and got.flags.c_contiguous
    assert np.allclose(got, queries @ rows.T, atol=1e-5)


def test_scale_similarities_at_use_the_float32_sample_rows_exactly(index: ToolIndex) -> None:
    # A float16 matrix (as served at scale): the sample's rows are kept as
    # float32 at load; cosines at any mix of sample and other positions must
    # equal the plain product, whichever way they are computed.
    from dataclasses import replace

    from cartograph.index.corpus import SAMPLE_TOOLS

    rng = np.random.default_rng(7)
    size = SAMPLE_TOOLS + 3000
    matrix: Any = rng.standard_normal((size, 8)).astype(np.float16)  # served as float16
    corpus = replace(
        index.corpus,
        tool_server=np.zeros(size, dtype=np.int64),
        tool_names=tuple(f"t{i}" for i in range(size)),
        tool_vectors=matrix,
    )
    queries = rng.standard_normal((3, 8)).astype(np.float32)
    expected = queries @ matrix.astype(np.float32).T
    sample = set(corpus.sample.tolist())
    assert len(sample) == SAMPLE_TOOLS

    for positions in (
        np.arange(size),  # every sample row: one product over the kept block
        np.array([1, 2, 3, int(corpus.sample[5]), size - 1]),  # a few: gathered
        np.array([i for i in range(50) if i not in sample]),  # none
    ):
        got = corpus.tool_similarities_at(queries, positions.astype(np.int64))
        assert np.allclose(got, expected[:, positions], atol=1e-5)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 100, 4095, 4096, 4097, 5000, 9000, 100_000])
def test_the_spread_sample_is_what_np_unique_of_the_spread_gives(size: int) -> None:
    expected = np.unique(np.linspace(0, size - 1, min(SAMPLE_TOOLS, size)).astype(np.int64))
    got = spread_sample(size)
    assert got.dtype == np.int64
    assert np.array_equal(got, expected)
