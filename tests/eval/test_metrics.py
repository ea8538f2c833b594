"""Metric values checked against hand computation."""

from __future__ import annotations

import math

import pytest

from cartograph.eval.intervals import bootstrap_interval
from cartograph.eval.metrics import Judgement, expected_random, query_metrics

A, B, C, D = ("s1", "a"), ("s1", "b"), ("s2", "c"), ("s3", "d")
X, Y, Z = ("s3", "x"), ("s4", "y"), ("s4", "z")


def test_metrics_of_one_ranking_match_hand_computation() -> None:
    judgement = Judgement(
        gold=frozenset({A, B, C}), groups=(frozenset({A}), frozenset({B, D}), frozenset({C}))
    )
    m = query_metrics([X, A, Y, B, Z, C], judgement)
    assert m["R@1"] == 0.0
    assert m["R@3"] == pytest.approx(1 / 3)
    assert m["R@5"] == pytest.approx(2 / 3)
    assert (m["Hit@1"], m["Hit@3"], m["Hit@5"]) == (0.0, 1.0, 1.0)
    assert m["G@5"] == pytest.approx(2 / 3)  # {A} and {B, D} served, {C} not
    assert m["MRR"] == pytest.approx(1 / 2)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["nDCG@5"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert m["nDCG@10"] == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(5) + 1 / math.log2(7)) / ideal
    )
    assert m["SrvR@5"] == pytest.approx(1 / 2)  # s1 present, s2 not


def test_mrr_stops_at_depth_100() -> None:
    judgement = Judgement(gold=frozenset({A}), groups=(frozenset({A}),))
    filler = [("f", str(i)) for i in range(100)]
    assert query_metrics([*filler, A], judgement)["MRR"] == 0.0


def test_expected_random_metrics_are_exact() -> None:
    catalog = [A, B, C, D]
    m = expected_random(Judgement(gold=frozenset({A}), groups=(frozenset({A}),)), catalog)
    assert m["R@1"] == pytest.approx(1 / 4)
    assert m["Hit@3"] == pytest.approx(3 / 4)
    assert m["MRR"] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    # s1 holds 2 of 4 tools: P(s1 among a random top 4) = 1.
    assert m["SrvR@5"] == pytest.approx(1.0)


def test_bootstrap_interval_brackets_the_mean_and_collapses_on_constants() -> None:
    low, high = bootstrap_interval([0.0, 1.0] * 50)
    assert low < 0.5 < high
    assert bootstrap_interval([1.0] * 10) == (1.0, 1.0)
