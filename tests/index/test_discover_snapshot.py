"""discover's text, as a model reads it, pinned whole (a snapshot, not a few substrings)."""

from __future__ import annotations

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.index.discover import discover
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.tool_index import ToolIndex
from cartograph.server.discover_reply import discover_text
from tests.index.retrieval_fixtures import small_catalog
from tests.snapshot import assert_snapshot


def _text(task: str, *, k: int, threshold: float) -> str:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    index = ToolIndex.build(cards, FakeEmbedder())
    return discover_text(discover(index, cards, task, k=k, threshold=threshold))


def test_discover_text_for_a_confident_match_is_unchanged() -> None:
    assert_snapshot(_text("read a text file from disk", k=3, threshold=0.0), "discover_match.txt")


def test_discover_text_when_it_abstains_is_unchanged() -> None:
    assert_snapshot(_text("book a flight to Tokyo", k=3, threshold=0.99), "discover_abstain.txt")
