"""The failure anatomy names the signal that put the wrong tool first."""

from __future__ import annotations

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.eval.anatomy import classify, failure_anatomy
from cartograph.eval.data import EvalQuery, GoldTool
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.tool_index import ToolIndex
from tests.index.retrieval_fixtures import small_catalog


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())


def _query(qid: str, text: str, server: str, tool: str) -> EvalQuery:
    return EvalQuery(id=qid, query=text, gold=(GoldTool(server=server, tool=tool),))


def test_a_right_first_tool_is_counted_and_a_sibling_win_is_a_miss(index: ToolIndex) -> None:
    report = failure_anatomy(
        index,
        [
            _query("hit", "read a text file from disk", "files", "read_file"),
            _query("sib", "read a text file from disk", "files", "write_file"),
        ],
    )
    assert (report.queries, report.first, report.sibling_first) == (2, 1, 1)
    (miss,) = report.misses
    assert (miss.id, miss.winner, miss.gold, miss.same_server) == (
        "sib",
        "files/read_file",
        "files/write_file",
        True,
    )
    assert miss.cause == "both signals prefer the winner"
    assert miss.winner_lexical_rank == 1 and miss.gold_lexical_rank > 1


def test_a_gold_tool_both_signals_rank_low_is_one_neither_finds(index: ToolIndex) -> None:
    report = failure_anatomy(
        index, [_query("far", "read a text file from disk", "charts", "pie_chart")], unreached=2
    )
    assert report.causes["neither signal finds it"] == 1
    assert report.gold_not_in_top5 + report.other_server_first_gold_in_top5 == 1


@pytest.mark.parametrize(
    ("lexical", "dense", "cause"),
    [
        ([1, 2], [2, 1], "dense overrules lexical"),
        ([2, 1], [1, 2], "lexical overrules dense"),
        ([2, 1], [2, 1], "both signals prefer the winner"),
        ([1, 2], [1, 2], "fusion extras (server, steps)"),
        ([30, 1], [40, 1], "neither signal finds it"),
    ],
)
def test_each_cause_follows_from_the_two_signals_ranks(
    lexical: list[int], dense: list[int], cause: str
) -> None:
    assert classify(np.array(lexical, float), np.array(dense, float), 0, 1) == cause
