"""Cross-validated tuning of the hybrid ranker (``benchmarks/tune_hybrid.py`` runs it for real)."""

from __future__ import annotations

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.eval.data import EvalQuery, GoldTool
from cartograph.eval.tune import DEFAULT_GRID, REPORTED, TuneSet, _Scored, cross_validate_sets
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.rankers.hybrid import HybridParams
from cartograph.index.tool_index import ToolIndex
from tests.index.retrieval_fixtures import small_catalog


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())


def _q(i: int, text: str, server: str, tool: str) -> EvalQuery:
    return EvalQuery(id=str(i), query=text, gold=(GoldTool(server=server, tool=tool),))


SINGLE = [
    _q(1, "read a text file from disk", "files", "read_file"),
    _q(2, "weather forecast for a city", "weather", "get_forecast"),
    _q(3, "draw a pie chart image from shares", "charts", "pie_chart"),
    _q(4, "severe weather alerts for a region", "weather", "get_alerts"),
    _q(5, "draw a bar chart", "charts", "bar_chart"),
]
OTHER = [
    _q(6, "forecast for Oslo", "weather", "get_forecast"),
    _q(7, "open a file and read it", "files", "read_file"),
]


def test_each_query_is_held_out_in_exactly_one_fold(index: ToolIndex) -> None:
    split = _Scored(TuneSet("single", index, SINGLE)).split(folds=3, seed=0)
    assert len(split) == 3
    assert sorted(i for part in split for i in part) == list(range(len(SINGLE)))


def test_a_one_point_grid_is_chosen_in_every_fold_and_scores_alike_in_and_out_of_sample(
    index: ToolIndex,
) -> None:
    only = HybridParams()
    report = cross_validate_sets([TuneSet("single", index, SINGLE)], [only], folds=2)
    assert report.grid_size == 1
    assert report.fold_choices == [report.best, report.best]
    assert report.held_out == report.in_sample
    assert set(report.held_out) == set(REPORTED)


def test_every_set_is_reported_on_its_own_and_the_run_is_reproducible(index: ToolIndex) -> None:
    sets = [TuneSet("single", index, SINGLE), TuneSet("other", index, OTHER)]
    grid = DEFAULT_GRID[:6]
    first = cross_validate_sets(sets, grid, folds=2, seed=3)
    again = cross_validate_sets(sets, grid, folds=2, seed=3)
    assert first == again
    assert sorted(first.per_set) == ["other", "single"]
    assert len(first.fold_choices) == 2
    assert first.best in [{k: float(v) for k, v in vars(p).items()} for p in grid]
