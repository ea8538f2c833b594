"""The open-world abstention rule over the demo federation's real snapshot (shipped MiniLM).

An out-of-catalog task must abstain because a background tool fits it much
better than any demo tool, while an answerable task in everyday words, whose
raw cosine is too low for the cosine rule, must not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.snapshot import load_catalog
from cartograph.index.discover import DEFAULT_ABSTAIN_THRESHOLD, discover
from cartograph.index.embedders import get_embedder
from cartograph.index.open_world import MINILM_MEASURED_DELTA, calibrated_delta
from cartograph.index.tool_index import ToolIndex

DEMO_CATALOG = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "demo" / "catalog.json"


@pytest.fixture(scope="module")
def demo() -> tuple[ToolIndex, VerifiedCards]:
    cards = attest_with_unsafe_throwaway_key(load_catalog(DEMO_CATALOG))
    return ToolIndex.build(cards, get_embedder("minilm")), cards


def test_a_task_for_a_service_the_federation_does_not_reach_abstains(
    demo: tuple[ToolIndex, VerifiedCards],
) -> None:
    index, cards = demo
    task = "donate fifty euros to a children's charity"
    result = discover(index, cards, task, open_world_delta=MINILM_MEASURED_DELTA)
    assert result.abstained
    assert result.hint is not None and len(result.tools) == 3  # the closest few, still listed


def test_an_answerable_task_with_a_low_cosine_does_not_abstain(
    demo: tuple[ToolIndex, VerifiedCards],
) -> None:
    index, cards = demo
    task = "forget that Dana likes jazz"  # memory/delete_*: the cosine rule cries wolf here
    cosine = discover(index, cards, task, threshold=DEFAULT_ABSTAIN_THRESHOLD)
    assert cosine.abstained and cosine.confidence < DEFAULT_ABSTAIN_THRESHOLD
    result = discover(index, cards, task, open_world_delta=MINILM_MEASURED_DELTA)
    assert not result.abstained


def test_background_tools_that_duplicate_a_catalog_capability_are_masked(
    demo: tuple[ToolIndex, VerifiedCards],
) -> None:
    world = demo[0].open_world()
    names = world.background.names
    kept = {names[i] for i in np.flatnonzero(world.kept())}
    assert {"timemachine", "calculator", "chat_with_workspace"}.isdisjoint(
        kept
    )  # time, calc, Notion
    assert {"RestaurantBookingTool", "EmailByNylas", "CharityTool"} <= kept


def test_no_model_has_the_open_world_rule_on_by_default() -> None:
    assert calibrated_delta(get_embedder("minilm").model_id) is None
