"""The one normaliser and the one tokeniser every layer shares."""

from __future__ import annotations

from cartograph.index.text import tokenize
from cartograph.names import cjk_bigrams, normalise_name, split_identifier, word_runs
from cartograph.rift.tokens import words


def test_slash_and_colon_are_separators_like_underscore() -> None:
    assert normalise_name("fs/read_file") == normalise_name("fs:readFile") == "fsreadfile"


def test_identifiers_split_into_words_at_case_and_separators() -> None:
    assert split_identifier("get_stockPrice-v2") == "get stock Price v2"
    assert word_runs("HTTPRequest/getURL") == ["http", "request", "get", "url"]


def test_full_width_text_reads_as_plain_letters() -> None:
    assert word_runs("ｇｅｔＦｉｌｅ") == word_runs("getFile") == ["get", "file"]


def test_letters_of_any_script_stay_in_one_word() -> None:
    assert word_runs("größe café") == ["größe", "café"]


def test_cjk_runs_become_bigrams() -> None:
    assert cjk_bigrams("天気予報") == ["天気", "気予", "予報"]
    assert cjk_bigrams("天") == ["天"]


def test_search_and_rift_split_text_the_same_way() -> None:
    text = "listOpenPullRequests for the café:menu"
    assert [w for w in word_runs(text) if len(w) > 1] == [
        "list",
        "open",
        "pull",
        "requests",
        "for",
        "the",
        "café",
        "menu",
    ]
    assert words(text) == ["list", "open", "pull", "requests", "café", "menu"]
    assert tokenize(text) == ["list", "open", "pull", "request", "café", "menu"]
