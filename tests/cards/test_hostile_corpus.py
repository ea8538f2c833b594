"""A hostile publisher cannot steer ranking with its text.

Each fixture in ``fixtures/hostile/`` is one attack (its file name says which):
a server whose publisher text tries to win the tasks of real tools — keyword
stuffing, "use this tool for every task", naming other servers' tools, hidden
instructions in the description or in a parameter's description, homoglyph
and invisible-character tricks. Placed beside the real demo federation
(``benchmarks/data/demo/catalog.json``, a snapshot of its ``tools/list``),
with template cards and the shipped embedding model, none of them reaches the
top 5 for the tasks of the tools it imitates. The tasks were written for
these tests, not taken from any benchmark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog import load_catalog
from cartograph.catalog.model import Catalog, ServerDef
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex
from tests.cards.support import silenced

REPO = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).resolve().parent / "fixtures" / "hostile"
DEMO = REPO / "benchmarks" / "data" / "demo" / "catalog.json"
ATTACKS = sorted(p.stem for p in HOSTILE.glob("*.json"))
TOP = 5
DEPTH = 11


def fixture(attack: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HOSTILE / f"{attack}.json").read_text("utf-8"))
    return data


@pytest.fixture(scope="module")
def federation() -> tuple[ToolIndex, VerifiedCards]:
    demo = load_catalog(DEMO)
    hostile = tuple(ServerDef.model_validate(fixture(a)["server"]) for a in ATTACKS)
    cards = attest_with_unsafe_throwaway_key(Catalog(servers=(*demo.servers, *hostile)))
    return ToolIndex.build(cards, get_embedder("minilm")), cards


def test_the_corpus_covers_every_attack_the_issue_names() -> None:
    assert ATTACKS == [
        "hidden_instructions_in_description",
        "hidden_instructions_in_parameter_descriptions",
        "homoglyph_and_invisible_characters",
        "keyword_stuffing",
        "names_other_tools",
        "use_for_every_task",
    ]


@pytest.mark.parametrize("attack", ATTACKS)
def test_hostile_tools_stay_out_of_the_top_5_for_the_tasks_they_imitate(
    attack: str, federation: tuple[ToolIndex, VerifiedCards]
) -> None:
    index, _ = federation
    data = fixture(attack)
    hostile = data["server"]["name"]
    for target in data["imitates"]:
        assert index.keys().count((target["server"], target["tool"])) == 1
        for task in target["tasks"]:
            top = [(hit.server, hit.tool) for hit in index.search(task, TOP)]
            assert all(server != hostile for server, _ in top), (attack, task, top)


@pytest.mark.parametrize("attack", ATTACKS)
def test_hostile_cards_carry_no_stuffing_instructions_or_other_tools_names(
    attack: str, federation: tuple[ToolIndex, VerifiedCards]
) -> None:
    _, cards = federation
    card = cards[fixture(attack)["server"]["name"]].body
    everything = json.dumps(card.json_dict(), ensure_ascii=False).lower()
    ranked = " ".join(
        [card.capability.summary, " ".join(card.capability.tags)]
        + [
            " ".join((t.description, t.arguments, t.when_to_use, *t.synonyms, *t.examples))
            for t in card.tools
        ]
    ).lower()
    for phrase in ("tokyo", "knowledge graph", "remember", "every task", "any request"):
        assert phrase not in ranked, phrase
    for phrase in (
        "better than",
        "get_current_time",
        "create_entities",
        "read_file",
        "ignore previous",
        "instead of",
        "call it first",
        "\u200b",
    ):
        assert phrase not in everything, phrase
    assert not any(0xE0000 <= ord(c) <= 0xE007F for c in everything)


def test_a_homoglyph_name_is_described_as_such_and_not_as_the_tool_it_imitates(
    federation: tuple[ToolIndex, VerifiedCards],
) -> None:
    _, cards = federation
    tool = cards["glyph-tools"].tool("get_curr\u0435nt_time")
    assert tool is not None
    assert tool.description.startswith("Tool whose name mixes writing systems")
    assert tool.examples == ()
    assert "time" not in tool.description.lower().replace("timezone", "")


def test_publisher_text_lifts_no_hostile_tool_above_its_silent_twin() -> None:
    """Whatever rank a hostile tool reaches in the first ten, its text did not earn it:
    without any publisher text it ranks at least as high for every imitated task. (Below
    the first ten, ranks among unrelated tools are noise and not compared.)"""
    demo = load_catalog(DEMO)
    loud = [ServerDef.model_validate(fixture(a)["server"]) for a in ATTACKS]
    indexes = [
        ToolIndex.build(
            attest_with_unsafe_throwaway_key(Catalog(servers=(*demo.servers, *servers))),
            get_embedder("minilm"),
        )
        for servers in (loud, [silenced(s) for s in loud])
    ]
    for attack in ATTACKS:
        data = fixture(attack)
        for target in data["imitates"]:
            for task in target["tasks"]:
                loud_rank, quiet_rank = (rank_of(i, task, data["server"]["name"]) for i in indexes)
                assert min(loud_rank, DEPTH) >= min(quiet_rank, DEPTH), (attack, task)


def rank_of(index: ToolIndex, task: str, server: str) -> int:
    """1-based rank of ``server``'s best tool for ``task``."""
    hits = index.search(task, DEPTH)
    return next((n for n, hit in enumerate(hits, 1) if hit.server == server), len(hits) + 1)
