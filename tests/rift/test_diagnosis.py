"""Risk recalibration, true diagnoses, duplicate servers and the validation counts."""

from __future__ import annotations

import tomllib

from cartograph.cards.verified import VerifiedCards
from cartograph.rift.actions import different_actions
from cartograph.rift.analysis import EmbedFn, analyse, tools_from_cards
from cartograph.rift.diagnosis import MemberText, suggest
from cartograph.rift.model import RiftSettings
from cartograph.rift.tokens import Vocabulary
from cartograph.rift.validate import LabelledQuery, validate
from tests.rift.support import cards_with_text, catalog_of, schema

BLOCK = "Works with one block of a page and its content."


def _block_cards() -> VerifiedCards:
    # The publisher described them differently; the operator's text is one sentence for
    # both. (One publisher description for both would make them name-only copies: HIGH.)
    tools = [
        ("API-retrieve-a-block", "Retrieves a block.", schema(block_id="block id")),
        ("API-update-a-block", "Updates a block.", schema(block_id="block id")),
    ]
    catalog = catalog_of({"notion": tools})
    return cards_with_text(catalog, {"notion": {t: BLOCK for t, _, _ in tools}})


def test_names_that_state_different_actions_cap_an_identical_pair_at_medium(
    fake_embed: EmbedFn,
) -> None:
    cards = _block_cards()
    ours = analyse(tools_from_cards(cards), fake_embed, RiftSettings(), model_id="fake")
    paper = RiftSettings.paper()
    theirs = analyse(tools_from_cards(cards, probe="arguments"), fake_embed, paper, model_id="f")
    assert ours.clusters[0].risk == "MEDIUM"
    assert any("different actions ('retrieve', 'update')" in n for n in ours.clusters[0].notes)
    assert theirs.clusters[0].risk == "HIGH"


def test_synonymous_verbs_are_not_different_actions() -> None:
    assert different_actions("get_page", "retrieve-a-page") is None
    assert different_actions("start_trace", "stop_trace") == ("start", "stop")
    assert different_actions("git_pull", "git_push") == ("pull", "push")
    assert different_actions("echo", "update_issue") is None  # no verb: no claim


def test_diagnosis_names_the_differing_verb_instead_of_saying_nothing_differs(
    fake_embed: EmbedFn,
) -> None:
    report = analyse(tools_from_cards(_block_cards()), fake_embed, RiftSettings(), model_id="f")
    advice = {s.tool: s for s in report.clusters[0].suggestions}
    retrieve = advice["API-retrieve-a-block"]
    assert "nothing" not in retrieve.text
    assert "'retrieve' where API-update-a-block says 'update'" in retrieve.text
    assert retrieve.words == ("retrieve",) and retrieve.source == "name"
    override = tomllib.loads(retrieve.fix)
    text = override["servers"]["notion"]["tools"]["API-retrieve-a-block"]["description"]
    assert text.startswith("Use it to retrieve a block. ")
    assert text.endswith(BLOCK)


def test_only_truly_identical_tools_are_told_nothing_differs() -> None:
    vocab = Vocabulary()
    members = [
        MemberText("a", "run", vocab.tokens("run job"), (), ("job",)),
        MemberText("b", "run", vocab.tokens("run job"), (), ("job",)),
    ]
    advice = suggest(members, 0, vocab, "b/run")
    assert advice.source == "none" and advice.kind == "none"
    assert "name, arguments and card text say nothing b/run does not" in advice.text


def test_the_same_tool_on_another_server_gets_an_exact_deny_rule() -> None:
    vocab = Vocabulary()
    members = [
        MemberText("git", "git_add", vocab.tokens("stage files"), (), ("repo_path",)),
        MemberText("git2", "git_add", vocab.tokens("stage file changes"), (), ("path",)),
    ]
    advice = suggest(members, 1, vocab, "git/git_add")
    assert advice.kind == "deny"
    policy = tomllib.loads(advice.fix)["catalogs"][0]["policy"]
    assert policy == {"deny": ["git2/git_add"]}


def _twice_connected() -> VerifiedCards:
    tools = [
        ("echo", "x", schema(message="text to echo")),
        ("get_sum", "x", schema(a="first number")),
    ]
    catalog = catalog_of({"everything": tools, "everything-http": tools})
    text = {"echo": "Echoes the message back.", "get_sum": "Adds two numbers."}
    return cards_with_text(catalog, {"everything": text, "everything-http": text})


def test_a_server_connected_twice_is_one_finding_with_its_config_fix(fake_embed: EmbedFn) -> None:
    report = analyse(tools_from_cards(_twice_connected()), fake_embed, RiftSettings(), model_id="f")
    (dup,) = report.duplicates
    assert dup.servers == ("everything", "everything-http") and dup.tools == 2
    assert tomllib.loads(dup.fix) == {"servers": {"everything-http": {"enabled": False}}}
    assert report.clusters and all(c.duplicate and c.risk == "LOW" for c in report.clusters)
    assert report.at_least("MEDIUM") == ()


def test_validation_counts_a_rival_above_the_gold_tool_as_a_confusion(
    fake_embed: EmbedFn,
) -> None:
    report = analyse(tools_from_cards(_block_cards()), fake_embed, RiftSettings(), model_id="f")
    retrieve, update = "notion/API-retrieve-a-block", "notion/API-update-a-block"
    queries = [
        LabelledQuery("confused", frozenset({retrieve}), [update, retrieve]),
        LabelledQuery("right", frozenset({retrieve}), [retrieve, update]),
        LabelledQuery("both gold", frozenset({retrieve, update}), [update, retrieve]),
    ]
    result = validate(report, queries)
    assert (result.confusions, result.flagged, result.recall) == (1, 1, 1.0)
    assert result.high == 0 and result.precision is None


def test_an_override_that_cannot_clear_regenerate_says_so() -> None:
    vocab = Vocabulary()
    members = [
        MemberText("n", "retrieve_block", vocab.tokens("retrieve block content"), (), ("id",)),
        MemberText("n", "list_children", vocab.tokens("retrieve block children list"), (), ("id",)),
        MemberText("n", "update_block", vocab.tokens("update block content"), (), ("id",)),
    ]
    advice = suggest(members, 0, vocab, "n/update_block", "Retrieve block content.")
    assert advice.text.startswith("REGENERATE n/retrieve_block vs n/update_block")
    assert "Use it to retrieve block." in advice.fix
    assert "separates it from its nearest rival only" in advice.text
