"""Layer 3 tokens, synthetic probes, name confusables and the two baselines."""

from __future__ import annotations

import numpy as np
import pytest

from cartograph.index.entries import imitations
from cartograph.names import normalise_name
from cartograph.rift.baselines import cosine_groups, jaccard_groups
from cartograph.rift.diagnosis import MemberText, distinct_tokens, shared_tokens, suggest
from cartograph.rift.model import ToolRef
from cartograph.rift.names import name_confusables
from cartograph.rift.queries import probe_for, probe_key, probe_ladder
from cartograph.rift.tokens import Vocabulary, words


def test_words_split_identifiers_drop_stopwords_and_bigram_cjk() -> None:
    assert words("get_xrefsTo the References") == ["get", "xrefs", "references"]
    assert words("删除文件") == ["删除", "除文", "文件"]


def test_plural_and_singular_are_one_token_shown_as_first_seen() -> None:
    vocab = Vocabulary()
    a = vocab.tokens("Lists references for an address")
    b = vocab.tokens("Lists the reference of one address")
    assert a == b
    assert vocab.show(a) == ("address", "lists", "references")


def test_shared_and_distinct_tokens_follow_the_set_definitions() -> None:
    vocab = Vocabulary()
    members = [
        MemberText("g", "xrefs_to", vocab.tokens("references to target address"), ()),
        MemberText("g", "xrefs_from", vocab.tokens("references from source address"), ()),
        MemberText("g", "xrefs_fn", vocab.tokens("references address"), ()),
    ]
    assert vocab.show(shared_tokens(members)) == ("address", "references")
    assert vocab.show(distinct_tokens(members, 0)) == ("target",)
    assert distinct_tokens(members, 2) == frozenset()


def test_suggestion_prefers_name_words_no_other_member_uses() -> None:
    vocab = Vocabulary()
    members = [
        MemberText("d", "registry_login", vocab.tokens("registry host default"), ("host",)),
        MemberText("d", "registry_logout", vocab.tokens("registry host default"), ("host",)),
    ]
    advice = suggest(members, 0, vocab, "d/registry_logout")
    assert advice.words == ("login",)
    assert advice.source == "name"
    assert "d/registry_logout" in advice.text


def test_suggestion_without_any_separating_word_says_regenerate_or_merge() -> None:
    vocab = Vocabulary()
    members = [
        MemberText("a", "run", vocab.tokens("run job"), ()),
        MemberText("b", "run", vocab.tokens("run job"), ()),
    ]
    advice = suggest(members, 0, vocab, "b/run")
    assert advice.source == "none" and advice.words == ()
    assert advice.text.startswith("REGENERATE a/run")


def test_probe_is_built_from_arguments_not_from_any_description_of_the_tool() -> None:
    schema = {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "city": {"type": "string", "description": "City to look up. More text here."},
            "days": {"type": ["integer", "null"]},
        },
        "required": ["city"],
    }
    probe = probe_for("get_forecast", schema)
    assert probe.source == "arguments"
    assert probe.text.startswith("city (string) City to look up.")
    assert "one of celsius, fahrenheit" in probe.text
    assert "days (integer)" in probe.text
    assert "More text" not in probe.text  # first sentence only
    assert "forecast" not in probe.text


def test_probe_falls_back_to_the_name_for_tools_without_arguments() -> None:
    probe = probe_for("listAllRepos", {"type": "object", "properties": {}})
    assert probe.source == "name"
    assert probe.text == "list All Repos"


def test_probe_strips_urls_control_characters_and_markup_from_argument_text() -> None:
    schema = {
        "properties": {
            "q": {"description": "Query\u200b <b>see</b> https://evil.example/x \x07now"},
        }
    }
    text = probe_for("t", schema).text
    assert "http" not in text and "<" not in text and "\u200b" not in text and "\x07" not in text


def _refs(*pairs: tuple[str, str]) -> list[ToolRef]:
    return [ToolRef(server=s, tool=t) for s, t in pairs]


def test_case_and_separator_variants_collide_as_normalised() -> None:
    found = name_confusables(_refs(("m", "send_email"), ("m", "sendEmail"), ("n", "send-email")))
    (only,) = found
    assert only.kind == "normalised"
    assert only.scope == "within-server"
    assert only.key == "sendemail"
    assert len(only.members) == 3


def test_nfkc_folds_fullwidth_names() -> None:
    assert normalise_name("ｓｅｎｄ＿ｍａｉｌ") == normalise_name("send_mail")


def test_cyrillic_and_digit_lookalikes_are_reported() -> None:
    cyrillic = name_confusables(_refs(("a", "read_file"), ("b", "reаd_file")))  # Cyrillic а
    assert [c.kind for c in cyrillic] == ["lookalike"]
    assert cyrillic[0].scope == "cross-server"
    digits = name_confusables(
        _refs(("a", "send_mail"), ("a", "send_maiI"), ("a", "l0gin"), ("a", "login"))
    )
    assert sorted(len(c.members) for c in digits) == [2, 2]
    assert {c.kind for c in digits} == {"lookalike"}


@pytest.mark.parametrize(
    ("imitation", "what"),
    [
        ("read_fiIe", "a capital I for an l"),
        ("reаd_file", "a Cyrillic а"),
        ("read_fi1e", "a digit 1 for an l"),
        ("read_fi\u200ble", "a zero-width space inside the name"),
    ],
)
def test_rift_and_the_index_agree_on_which_names_look_alike(imitation: str, what: str) -> None:
    found = name_confusables(_refs(("fs", "read_file"), ("evil", imitation)))
    lookalike = [c for c in found if c.kind == "lookalike"]
    assert [{m.tool for m in c.members} for c in lookalike] == [{"read_file", imitation}], what
    # The index reads the same skeleton (which of two equally plain spellings is the
    # original is its own call): the imitation never keeps its name view.
    assert ("evil", imitation) in imitations([("fs", "read_file"), ("evil", imitation)])


def test_a_zero_for_an_o_is_a_lookalike_from_the_one_supplement() -> None:
    (found,) = name_confusables(_refs(("a", "l0g_in"), ("b", "log_in")))
    assert found.kind == "lookalike"
    assert ("a", "l0g_in") in imitations([("a", "l0g_in"), ("b", "log_in")])


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("read\u200bfile", "read<U+200B>file (U+200B ZERO WIDTH SPACE)"),
        ("read\u202efile", "read<U+202E>file (U+202E RIGHT-TO-LEFT OVERRIDE)"),
        ("read\u2066file", "read<U+2066>file (U+2066 LEFT-TO-RIGHT ISOLATE)"),
    ],
)
def test_invisible_and_bidi_characters_inside_a_name_are_a_finding_alone(
    name: str, shown: str
) -> None:
    (found,) = name_confusables(_refs(("s", name), ("s", "write_file")))
    assert found.kind == "invisible"
    assert found.key == shown
    assert [m.tool for m in found.members] == [name]


def test_same_name_on_two_servers_is_its_own_kind_and_distinct_names_do_not_collide() -> None:
    found = name_confusables(
        _refs(("a", "search"), ("b", "search"), ("a", "fetch"), ("a", "fetch_all"))
    )
    assert [(c.kind, c.scope) for c in found] == [("same-name", "cross-server")]


def test_cosine_baseline_is_connected_components_at_tau() -> None:
    vectors = np.asarray([[1, 0], [0.8, 0.6], [0.28, 0.96], [-1, 0]], dtype=np.float32)
    # 0–1 cos 0.8, 1–2 cos 0.8, 0–2 cos 0.28: one chain of three; 3 alone.
    assert cosine_groups(vectors, 0.65) == [[0, 1, 2]]
    assert cosine_groups(vectors, 0.9) == []


def test_jaccard_baseline_links_token_sets_above_threshold_only() -> None:
    sets = [
        frozenset({"read", "file", "path"}),
        frozenset({"read", "file", "lines"}),  # J = 2/4 with 0
        frozenset({"send", "mail"}),
        frozenset({"send", "sms", "phone", "text"}),  # J = 1/5 with 2
    ]
    assert jaccard_groups(sets, 0.25) == [[0, 1]]
    assert jaccard_groups(sets, 0.5) == []


def test_name_plus_arguments_probe_prefixes_the_tool_name_in_words() -> None:
    schema = {"properties": {"language": {"type": "string"}}}
    plain = probe_for("get_trending_repos", schema)
    named = probe_for("get_trending_repos", schema, with_name=True)
    assert plain.text == "language (string)"
    assert named.text == "get trending repos: language (string)"
    assert named.source == "name+arguments"


def test_probe_ladder_is_the_papers_probe_then_name_then_server_only_by_default() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "number", "description": "Story"}}}
    rungs = probe_ladder("Hacker News", "getStoryWithComments", schema, "distinguishing")
    assert [p.text for p in rungs] == [
        "id (number) Story",
        "get Story With Comments: id (number) Story",
        "Hacker News get Story With Comments: id (number) Story",
    ]
    (paper,) = probe_ladder("Hacker News", "getStory", schema, "arguments")
    assert paper.text == "id (number) Story"


def test_probes_that_differ_only_by_case_plural_or_stopwords_are_the_same_task() -> None:
    assert probe_key("ID of the story; Limits") == probe_key("id story; limit")
    assert probe_key("get story") != probe_key("get stories with comments")
