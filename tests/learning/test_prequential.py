"""The prequential replay learns only from earlier queries; feedback is what each mode says."""

from __future__ import annotations

import random

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.eval.data import EvalQuery, GoldTool
from cartograph.eval.learning import _feedback, prequential
from cartograph.eval.metrics import Judgement
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.index.tool_index import ToolIndex
from cartograph.learning.learner import LearningParams
from tests.index.retrieval_fixtures import small_catalog


def query(number: int) -> EvalQuery:
    # A label zero-shot ranking cannot guess: only feedback can teach it.
    gold = (GoldTool(server="charts", tool="pie_chart"),)
    return EvalQuery(id=f"q{number}", query="weather forecast for a city", gold=gold)


def test_the_first_query_is_ranked_zero_shot_and_repeats_learn_from_it() -> None:
    index = ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())
    uncapped = LearningParams(first_place_margin=None)
    queries = [query(i) for i in range(3)]
    report = prequential(index, queries, method="bm25", seed=7, params=uncapped)
    per_query = [point.metrics for point in report.curve]  # 3 queries: one per window
    assert len(per_query) == 3
    first = per_query[0]
    assert first["oracle"] == first["surfaced"] == first["zero-shot"]  # nothing logged yet
    assert first["zero-shot"]["MRR"] < 1.0
    assert per_query[1]["oracle"]["MRR"] == 1.0  # learned from query 1 alone
    assert per_query[2]["zero-shot"] == first["zero-shot"]  # zero-shot never learns
    assert report.rows["oracle"]["MRR"].mean > report.rows["zero-shot"]["MRR"].mean
    # The shipped cap: the zero-shot first tool leads clearly, so it stays first.
    capped = prequential(index, queries, method="bm25", seed=7).curve[1].metrics
    assert capped["oracle"]["MRR"] == 0.5


def test_surfaced_feedback_calls_only_gold_tools_it_was_shown_plus_noise() -> None:
    shown = [("s", f"t{i}") for i in range(30)]
    gold = frozenset({("s", "t3"), ("s", "t25")})  # t25 is beyond the top 20
    judgement = Judgement(gold=gold, groups=(gold,))
    rng = random.Random(0)
    assert _feedback("surfaced", shown, judgement, 0.0, rng) == [("s", "t3")]
    assert sorted(_feedback("oracle", shown, judgement, 0.2, rng)) == sorted(gold)
    wrong = 0
    calls = 0
    for _ in range(2000):
        called = _feedback("surfaced", shown, judgement, 0.2, rng)
        calls += len(called)
        wrong += sum(1 for key in called if key not in gold)
        assert all(key in shown[:20] for key in called)
    assert 0.17 < wrong / calls < 0.23  # about 20 % of logged calls are wrong
