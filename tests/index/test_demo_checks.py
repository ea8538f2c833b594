"""The demo's own tasks show a right tool in the top 3, on the demo federation's snapshot.

The snapshot (``benchmarks/data/demo/catalog.json``) is the demo federation's
``tools/list``; cards are made by the template generator and signed in
memory, the shipped MiniLM ranks with the default (hybrid) ranker — what
``cartograph demo`` serves. The same tasks are checked live by the demo's
agent step (``cartograph.demo.steps.AGENT_TASKS``). Which right tool comes
first is not asserted: among sibling tools the margin can be below the
embedder's numeric spread across machines (docs/retrieval.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.demo.steps import AGENT_TASKS, CHECKED_TOP
from cartograph.index.discover import discover
from cartograph.index.embedders import get_embedder
from cartograph.index.entries import without_example_values
from cartograph.index.tool_index import ToolIndex

DEMO_CATALOG = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "demo" / "catalog.json"


@pytest.fixture(scope="module")
def demo_index() -> tuple[ToolIndex, object]:
    cards = attest_with_unsafe_throwaway_key(load_catalog(DEMO_CATALOG))
    return ToolIndex.build(cards, get_embedder("minilm")), cards


def _shown(demo_index: tuple[ToolIndex, object], task: str) -> list[tuple[str, str]]:
    index, cards = demo_index
    result = discover(index, cards, task, k=5)  # type: ignore[arg-type]
    assert not result.abstained, f"{task!r} abstained at confidence {result.confidence}"
    return [(t.server, t.tool) for t in result.tools[:CHECKED_TOP]]


def _task(text: str) -> frozenset[tuple[str, str]]:
    (expected,) = [t.first for t in AGENT_TASKS if t.task == text]
    return expected


@pytest.mark.parametrize("task", [t.task for t in AGENT_TASKS])
def test_the_demo_task_shows_a_right_tool_in_the_top_3(
    demo_index: tuple[ToolIndex, object], task: str
) -> None:
    shown = _shown(demo_index, task)
    assert set(shown) & _task(task), f"{task!r}: shown {shown}"


def test_every_demo_task_says_which_tools_may_come_first() -> None:
    assert all(t.first for t in AGENT_TASKS)


def test_example_values_in_argument_text_are_not_indexed() -> None:
    text = "timezone: IANA timezone name (e.g., 'Asia/Tokyo', 'Europe/London'); Use 'UTC' as local"
    assert without_example_values(text) == "timezone: IANA timezone name ; Use as local"
    # Apostrophes inside words are not quotes.
    kept = "the user's name and the file's path"
    assert without_example_values(kept) == kept
