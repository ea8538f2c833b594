"""The task parser's lexical view: literals, steps, and negated words left out."""

from __future__ import annotations

import pytest

from cartograph.index.query import parse_query, query_tokens
from cartograph.index.text import tokenize


@pytest.mark.parametrize(
    ("task", "negated"),
    [
        ("what have I changed that isn't staged yet", "staged"),
        ("list the files without hidden ones", "hidden"),
        ("search repos but not archived ones", "archived"),
        ("never cached results", "cached"),
        ("find flights that don't stop over", "stop"),
    ],
)
def test_the_first_content_word_after_a_negation_is_not_lexical_evidence(
    task: str, negated: str
) -> None:
    assert tokenize(negated)[0] in tokenize(task)
    assert tokenize(negated)[0] not in query_tokens(task)
    assert tokenize(negated)[0] not in parse_query(task).tokens


def test_a_negation_reaches_one_content_word_only() -> None:
    # "do not know" hedges; the request's own object must stay.
    assert "tokyo" in query_tokens("I do not know the time in Tokyo")
    assert tokenize("time")[0] in query_tokens("I do not know the time in Tokyo")


def test_a_negation_stops_at_a_conjunction() -> None:
    assert tokenize("star")[0] in query_tokens("not now and star the repo")


@pytest.mark.parametrize("task", ["open issue no. 17", "call room no 12", "No. 5 on the list"])
def test_no_before_a_number_is_an_abbreviation_not_a_negation(task: str) -> None:
    assert query_tokens(task) == tuple(tokenize(task))


def test_steps_leave_negated_words_out_too() -> None:
    parsed = parse_query("list the changes that are not staged, then commit them")
    assert all(tokenize("staged")[0] not in c.tokens for c in parsed.clauses)
    assert any(tokenize("commit")[0] in c.tokens for c in parsed.clauses)
