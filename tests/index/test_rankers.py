"""Ranker logic on the fake embedder: stage-1 width, centroids, fusion, steps."""

from __future__ import annotations

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.errors import RetrievalError
from cartograph.index.corpus import server_centroids
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.query import parse_query
from cartograph.index.rankers import RANKER_NAMES, get_ranker, stage_one_width
from cartograph.index.rankers.base import unit_max, unit_range
from cartograph.index.tool_index import ToolIndex

from .retrieval_fixtures import small_catalog


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())


@pytest.mark.parametrize(
    ("servers", "tools", "k", "width"),
    [
        (70, 527, 5, 2),  # n̄ ≈ 7.5: ⌊10/7.5⌋ + 1 = 2
        (3, 3, 5, 3),  # n̄ = 1: ⌊10/1⌋ + 1 = 11, capped at m = 3
        (10, 100, 5, 2),  # n̄ = 10: ⌊10/10⌋ + 1 = 2
        (10, 20, 4, 5),  # n̄ = 2: ⌊8/2⌋ + 1 = 5
        (1, 50, 5, 1),  # one server: s never exceeds m
        (0, 0, 5, 0),
    ],
)
def test_stage_one_width_follows_the_papers_formula(
    servers: int, tools: int, k: int, width: int
) -> None:
    assert stage_one_width(servers, tools, k) == width


def test_server_centroid_is_the_normalised_mean_of_its_tool_vectors() -> None:
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    centroids = server_centroids(vectors, np.array([0, 0, 1]), 2)
    assert np.allclose(centroids[0], np.array([1, 1, 0]) / np.sqrt(2))
    assert np.allclose(centroids[1], [0, 0, 1])


def test_two_stage_ranks_only_tools_of_the_chosen_servers(index: ToolIndex) -> None:
    # 3 servers, 6 tools, k=1: n̄ = 2, s = max(2, ⌊2/2⌋ + 1) = 2 servers survive stage 1.
    ranked = index.rank("weather forecast alerts for my city", 1, method="two-stage", depth=6)
    servers = {index.keys()[i][0] for i, _ in ranked}
    assert len(ranked) == 4
    assert "weather" in servers
    assert len(servers) == 2


def test_unit_max_and_unit_range_normalise_per_query() -> None:
    assert np.allclose(unit_max(np.array([0.0, 2.0, 4.0])), [0.0, 0.5, 1.0])
    assert np.allclose(unit_range(np.array([0.2, 0.4, 0.6])), [0.0, 0.5, 1.0])
    assert np.allclose(unit_max(np.zeros(3)), 0.0)


def test_every_ranker_puts_the_obvious_tool_first(index: ToolIndex) -> None:
    for method in RANKER_NAMES:
        if method == "random":
            continue
        hits = index.search("read a text file from disk", k=1, method=method)
        assert (hits[0].server, hits[0].tool) == ("files", "read_file"), method


def test_hybrid_serves_every_step_of_a_multi_step_task(index: ToolIndex) -> None:
    hits = index.search(
        "get the weather forecast for Paris, then draw a bar chart, and write it to a file", k=3
    )
    assert {h.server for h in hits} == {"weather", "charts", "files"}


def test_a_task_splits_into_its_steps() -> None:
    parsed = parse_query(
        "Find the weather in Paris, draw a bar chart of it and save it to /tmp/out/chart.png."
    )
    assert [c.text for c in parsed.clauses] == [
        "Find the weather in Paris",
        "draw a bar chart of it",
        "save it to  file path png",
    ]


def test_unknown_ranker_is_rejected_with_its_code(index: ToolIndex) -> None:
    with pytest.raises(RetrievalError) as err:
        get_ranker("magic")
    assert err.value.code == "unknown_ranker"
    with pytest.raises(RetrievalError) as err:
        index.search("anything", k=0)
    assert err.value.code == "bad_k"


def test_random_ranker_repeats_for_the_same_task(index: ToolIndex) -> None:
    first = index.search("anything at all", k=6, method="random")
    assert first == index.search("anything at all", k=6, method="random")
    assert len({(h.server, h.tool) for h in first}) == 6


def test_relative_units_give_every_step_the_same_best_score() -> None:
    from cartograph.index.rankers.hybrid import relative

    scores = np.array([[0.2, 0.4, 0.1], [2.0, 1.0, 0.5]])
    scaled = relative(scores, 1.0)
    assert np.allclose(scaled.max(axis=1), 1.0)
    assert np.allclose(scaled[1], [1.0, 0.5, 0.25])
    assert np.allclose(relative(scores, 0.0), scores)
