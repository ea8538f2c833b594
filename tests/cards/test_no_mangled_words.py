"""No card ever shows a mangled word: every word is the publisher's, whole, or the operator's own.

The retired template deleted words until no 12-word run of publisher text
survived, which cut words out of identifiers (``America/_York``, ``/Tokyo``).
Here every tool of the demo federation and of the LiveMCPBench catalog is
attested, and every word of every card (ranked text, examples, and the
schema prose shown to agents) must be either a whole word the publisher
served for that server, or a word the generator writes with no publisher
prose at all (its own vocabulary: the same catalog attested with every
description removed). A fragment of a publisher word is neither.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.generators.text import fold_confusables
from cartograph.cards.model import CardBody
from cartograph.catalog import load_catalog
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from tests.cards.support import silenced

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "benchmarks" / "data" / "demo" / "catalog.json"
# A word: letters/digits, joined inside by / _ - . ' : @ + # (identifiers, paths, zones).
WORD = re.compile(r"[^\W_]+(?:[/_\-.'’:@+#]+[^\W_]+)*[#+]*")


def words(text: str) -> set[str]:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(
        " " if unicodedata.category(c) == "Cc" else c
        for c in text
        if unicodedata.category(c) not in ("Cf", "Co", "Cn")
    )
    return {w.casefold() for w in WORD.findall(fold_confusables(text))}


def card_texts(body: CardBody) -> Iterable[str]:
    yield from (body.capability.summary, body.capability.guidance, *body.capability.tags)
    for tool in body.tools:
        yield from (tool.description, tool.arguments, tool.when_to_use)
        yield from (*tool.synonyms, *tool.examples)
        yield from schema_prose(tool.input_schema)


def schema_prose(schema: Any) -> Iterable[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("description", "title") and isinstance(value, str):
                yield value
            else:
                yield from schema_prose(value)
    elif isinstance(schema, list | tuple):
        for value in schema:
            yield from schema_prose(value)


def strings(value: Any) -> Iterable[str]:
    """Every string the publisher served (names, descriptions, schema keys and values)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def fragments(catalog: Catalog) -> list[tuple[str, str]]:
    """(server, word) for every card word that is neither the publisher's nor the operator's."""
    cards = attest_with_unsafe_throwaway_key(catalog)
    quiet = attest_with_unsafe_throwaway_key(
        Catalog(servers=tuple(silenced(s) for s in catalog.servers))
    )
    own = {w for s in catalog.servers for t in card_texts(quiet[s.name].body) for w in words(t)}
    found = []
    for server in catalog.servers:
        publisher = {w for text in strings(server.model_dump(by_alias=True)) for w in words(text)}
        for text in card_texts(cards[server.name].body):
            found += [(server.name, w) for w in sorted(words(text) - publisher - own)]
    return found


def test_the_check_catches_the_mangling_the_old_rule_produced() -> None:
    publisher = words("Times in 'America/New_York' and 'Asia/Tokyo'.")
    assert words("America/_York and /Tokyo") - publisher == {"america/_york", "tokyo"}


def test_no_demo_card_word_is_a_fragment_of_a_publisher_word() -> None:
    assert fragments(load_catalog(DEMO)) == []


def test_no_livemcpbench_card_word_is_a_fragment_of_a_publisher_word(
    livemcpbench_catalog_path: Path,
) -> None:
    assert fragments(load_catalog(livemcpbench_catalog_path)) == []


@pytest.mark.parametrize(
    ("name", "description", "kept"),
    [
        (
            "get_current_time",
            "Get the current time in a timezone such as 'America/New_York' or 'Asia/Tokyo'.",
            "America/New_York",
        ),
        ("get_code_snippets", "Returns C# and C++ code snippets for a topic.", "C#"),
    ],
)
def test_publisher_words_survive_whole(name: str, description: str, kept: str) -> None:
    server = ServerDef(name="s", tools=(ToolDef(name=name, description=description),))
    card = attest_with_unsafe_throwaway_key(Catalog(servers=(server,)))["s"].body
    text = " ".join(card_texts(card))
    assert kept in text
    assert "_York" not in text.replace("New_York", "")
    assert "/Tokyo" not in text.replace("Asia/Tokyo", "")
