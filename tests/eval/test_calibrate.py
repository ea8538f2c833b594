"""Abstention calibration over servable and out-of-catalog sets together (fake embedder)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.eval.calibrate import (
    CalibrationSet,
    RuleSets,
    calibrate_on_sets,
    cosine_rule,
    cross_validate,
    either_rule,
    fit_rule,
    open_world_rule,
    task_confidences,
)
from cartograph.eval.data import EvalQuery, GoldTool
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.tool_index import ToolIndex
from tests.index.retrieval_fixtures import small_catalog


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())


def _q(i: int, text: str, *gold: tuple[str, str]) -> EvalQuery:
    return EvalQuery(id=str(i), query=text, gold=tuple(GoldTool(server=s, tool=t) for s, t in gold))


SINGLE = [
    _q(1, "read a text file from disk", ("files", "read_file")),
    _q(2, "weather forecast for a city", ("weather", "get_forecast")),
    _q(3, "draw a pie chart image from shares", ("charts", "pie_chart")),
    _q(4, "severe weather alerts for a region", ("weather", "get_alerts")),
]
MULTI = [
    _q(5, "read a file, then draw a bar chart", ("files", "read_file"), ("charts", "bar_chart")),
    _q(6, "forecast for Oslo and write it to a file", ("weather", "get_forecast")),
]
NOTHING_FITS = [_q(7, "book a flight to Tokyo"), _q(8, "order a pizza for delivery")]


def test_threshold_keeps_every_servable_set_within_its_false_abstention_budget(
    index: ToolIndex,
) -> None:
    report = calibrate_on_sets(
        [CalibrationSet("single", index, SINGLE), CalibrationSet("multi", index, MULTI)],
        [CalibrationSet("ooc", index, NOTHING_FITS)],
        max_false_abstain=0.0,
    )
    lowest = min(task_confidences(index, SINGLE) + task_confidences(index, MULTI))
    # A zero budget: the threshold is the least confident servable task, which it keeps.
    assert report.threshold == pytest.approx(lowest, abs=1e-4)
    assert report.false_abstain == {"single": 0.0, "multi": 0.0}
    negatives = task_confidences(index, NOTHING_FITS)
    expected = sum(c < report.threshold for c in negatives) / len(negatives)
    assert report.true_abstain == {"ooc": expected}
    assert set(report.synthetic_true_abstain) == {"single", "multi"}


def test_a_looser_budget_never_lowers_the_threshold(index: ToolIndex) -> None:
    sets = [CalibrationSet("single", index, SINGLE)]
    ooc = [CalibrationSet("ooc", index, NOTHING_FITS)]
    strict = calibrate_on_sets(sets, ooc, max_false_abstain=0.0)
    loose = calibrate_on_sets(sets, ooc, max_false_abstain=0.5)
    assert loose.threshold >= strict.threshold
    assert loose.false_abstain["single"] <= 0.5


@pytest.mark.parametrize("rule_of", [cosine_rule, open_world_rule])
def test_a_fitted_rule_keeps_each_servable_set_within_its_budget(
    index: ToolIndex, rule_of: Callable[..., RuleSets[float]]
) -> None:
    servable = [CalibrationSet("single", index, SINGLE), CalibrationSet("multi", index, MULTI)]
    rule = rule_of(servable, [CalibrationSet("ooc", index, NOTHING_FITS)])
    fitted = fit_rule(rule, max_false_abstain=0.0)
    assert fitted.rates["single"] == 0.0 and fitted.rates["multi"] == 0.0
    assert set(fitted.rates) == {
        "single",
        "multi",
        "ooc",
        "single (gold removed)",
        "multi (gold removed)",
    }
    # The fitted parameter's own decisions are what the report says.
    assert isinstance(fitted.param, float)
    decided = rule.decide(fitted.param)
    assert fitted.rates["ooc"] == pytest.approx(float(decided["ooc"].mean()), abs=1e-4)


def test_the_pair_abstains_when_either_half_does_and_keeps_the_budget(index: ToolIndex) -> None:
    servable = [CalibrationSet("single", index, SINGLE), CalibrationSet("multi", index, MULTI)]
    ooc = [CalibrationSet("ooc", index, NOTHING_FITS)]
    cosine, world = cosine_rule(servable, ooc), open_world_rule(servable, ooc)
    pair = either_rule(cosine, world, thresholds=(-1.0, 0.2, 0.4))
    assert len(pair.params) == 3 * len(world.params)
    fitted = fit_rule(pair, max_false_abstain=0.0)
    assert fitted.rates["single"] == 0.0 and fitted.rates["multi"] == 0.0
    assert isinstance(fitted.param, tuple)
    threshold, delta = fitted.param
    low, outside, both = cosine.decide(threshold), world.decide(delta), pair.decide(fitted.param)
    for name, decided in both.items():
        assert (decided == (low[name] | outside[name])).all()
    # Never worse than the open world alone at the same budget: (-1, delta) is a candidate.
    alone = fit_rule(world, max_false_abstain=0.0)
    assert fitted.rates["ooc"] >= alone.rates["ooc"]


def test_cross_validation_fits_every_fold_on_the_other_folds(index: ToolIndex) -> None:
    servable = [CalibrationSet("single", index, SINGLE + MULTI)]
    rule = cosine_rule(servable, [CalibrationSet("ooc", index, NOTHING_FITS)])
    params, held = cross_validate(rule, folds=2, max_false_abstain=0.0)
    assert len(params) == 2
    assert set(held) == {"single", "ooc", "single (gold removed)"}
    assert all(0.0 <= v <= 1.0 for v in held.values())
