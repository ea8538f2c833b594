"""The one normaliser and the one tokeniser every layer shares."""

from __future__ import annotations

from cartograph.index.text import tokenize
from cartograph.names import (
    SKELETON_SUPPLEMENT,
    _confusable_classes,
    cjk_bigrams,
    invisible_characters,
    normalise_name,
    skeleton,
    split_identifier,
    word_runs,
)
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


def test_look_alike_names_share_a_skeleton_from_the_confusables_table() -> None:
    original = skeleton("get_file")
    assert skeleton("get_fiIe") == original  # a capital I for an l
    assert skeleton("get_fіle") == original  # a Cyrillic і
    assert skeleton("get_f\u200bile") == original  # a zero-width space
    assert skeleton("ｇｅｔ＿ｆｉｌｅ") == original  # full width
    assert skeleton("get_files") != original
    assert skeleton("put_file") != original


def test_the_skeleton_reads_letter_runs_as_the_confusables_table_does() -> None:
    # UTS #39 lists ``rn`` for ``m``: a multi-letter look-alike, not one character.
    assert skeleton("read_rnail") == skeleton("read_mail")
    assert skeleton("modern") == skeleton("modem")
    assert skeleton("read_nail") != skeleton("read_mail")


def test_the_supplement_adds_only_pairs_the_confusables_table_lacks() -> None:
    # The table lists 0 with capital O only; the supplement reads it as lower-case o too.
    assert skeleton("l0g_out") == skeleton("log_out") == skeleton("LOG_OUT")
    assert skeleton("svvap") == skeleton("swap")
    classes = _confusable_classes()
    assert classes["0"] != classes["o"]  # else the pair would not need supplementing
    assert SKELETON_SUPPLEMENT == (("0", "o"), ("vv", "w"))


def test_format_and_bidi_characters_are_invisible() -> None:
    assert invisible_characters("read\u200bfile") == ["\u200b"]
    assert invisible_characters("read\u202efile") == ["\u202e"]
    assert invisible_characters("read_file") == []


def test_one_name_groups_link_normalised_and_lookalike_spellings_transitively() -> None:
    from cartograph.names import one_name_groups

    # read_file ~ Read-File by normalisation, read_fiIe (a capital I for an l) by its
    # skeleton: all three are one name; echo stands alone.
    names = ["read_file", "echo", "Read-File", "read_fiIe", "ping", "ping"]
    assert one_name_groups(names) == [[0, 2, 3], [4, 5]]
    assert one_name_groups(["a", "b"]) == []
