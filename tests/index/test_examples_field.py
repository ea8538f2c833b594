"""The card's example tasks reach the index as their own field, each word once."""

from __future__ import annotations

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.index.entries import entries_from_cards, examples_text
from cartograph.index.lexical import FieldIndex
from cartograph.index.text import tokenize


def _catalog() -> Catalog:
    tools = (
        ToolDef(name="read_graph", description="Read the entire knowledge graph."),
        ToolDef(name="get_curr\u0435nt_time", description="Get current time in a timezone."),
    )
    return Catalog(servers=(ServerDef(name="memory", tools=tools),))


def test_examples_field_holds_each_word_of_the_tasks_and_synonyms_once() -> None:
    text = examples_text(("read the graph", "show me the graph"), ("fetch",))
    assert text == "read the graph show me fetch"


def test_entries_carry_the_cards_examples_apart_from_the_description() -> None:
    entry = {e.tool: e for e in entries_from_cards(attest_with_unsafe_throwaway_key(_catalog()))}[
        "read_graph"
    ]
    assert "show" in entry.examples.split() and "show" not in entry.description.lower()
    index = FieldIndex([entry.examples])
    assert index.scores(tokenize("show me the graph"))[0] > 0.0


def test_a_tool_whose_name_mixes_scripts_is_indexed_by_its_server_only() -> None:
    entries = {e.tool: e for e in entries_from_cards(attest_with_unsafe_throwaway_key(_catalog()))}
    opaque = entries["get_curr\u0435nt_time"]
    assert (opaque.name, opaque.description, opaque.arguments, opaque.examples) == ("", "", "", "")
    assert opaque.server_text == entries["read_graph"].server_text
