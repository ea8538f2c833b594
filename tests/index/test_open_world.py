"""The open-world abstention rule over the demo federation's real snapshot (shipped MiniLM).

An out-of-catalog task must abstain because a background tool fits it much
better than any demo tool, while an answerable task in everyday words, whose
raw cosine is too low for the cosine rule, must not.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.snapshot import load_catalog
from cartograph.errors import ModelIntegrityError
from cartograph.index import open_world
from cartograph.index.discover import DEFAULT_ABSTAIN_THRESHOLD, discover
from cartograph.index.embedders import get_embedder
from cartograph.index.open_world import Background, background_for, calibrated_delta
from cartograph.index.tool_index import ToolIndex

DEMO_CATALOG = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "demo" / "catalog.json"


@pytest.fixture(scope="module")
def demo() -> tuple[ToolIndex, VerifiedCards]:
    cards = attest_with_unsafe_throwaway_key(load_catalog(DEMO_CATALOG))
    return ToolIndex.build(cards, get_embedder("minilm")), cards


def _delta() -> float:
    delta = calibrated_delta(get_embedder("minilm").model_id)
    assert delta is not None
    return delta


def test_a_task_for_a_service_the_federation_does_not_reach_abstains(
    demo: tuple[ToolIndex, VerifiedCards],
) -> None:
    index, cards = demo
    task = "donate fifty euros to a children's charity"
    result = discover(index, cards, task, open_world_delta=_delta())
    assert result.abstained
    assert result.hint is not None and len(result.tools) == 3  # the closest few, still listed


def test_an_answerable_task_with_a_low_cosine_does_not_abstain(
    demo: tuple[ToolIndex, VerifiedCards],
) -> None:
    index, cards = demo
    task = "forget that Dana likes jazz"  # memory/delete_*: the cosine rule cries wolf here
    cosine = discover(index, cards, task, threshold=DEFAULT_ABSTAIN_THRESHOLD)
    assert cosine.abstained and cosine.confidence < DEFAULT_ABSTAIN_THRESHOLD
    result = discover(index, cards, task, open_world_delta=_delta())
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


def test_the_shipped_model_abstains_by_either_rule_by_default(
    demo: tuple[ToolIndex, VerifiedCards],
) -> None:
    index, cards = demo
    alarm = "set an alarm for 6:30"  # near the time server, served by no tool
    assert not discover(index, cards, alarm, threshold=DEFAULT_ABSTAIN_THRESHOLD).abstained
    assert discover(index, cards, alarm).abstained  # the open-world half catches it
    far = "donate fifty euros to a children's charity"
    assert discover(index, cards, far).confidence < DEFAULT_ABSTAIN_THRESHOLD
    assert discover(index, cards, far).abstained  # the cosine half alone would
    assert not discover(index, cards, "what time is it in Tokyo").abstained


def test_shipped_background_vectors_are_what_the_model_computes() -> None:
    model = get_embedder("minilm")
    background = background_for(model)
    texts = open_world.background_texts(_world())
    n = len(texts.names)
    sample = [0, n // 2, n - 1]
    both = model.embed(
        [texts.everything[i] for i in sample] + [texts.everything[n + i] for i in sample]
    )
    tools = both[:3] + both[3:]
    tools /= np.linalg.norm(tools, axis=1, keepdims=True)
    assert np.min(np.sum(tools * background.tools[sample], axis=1)) > 0.999
    tasks = model.embed(texts.everything[2 * n : 2 * n + 3])
    assert np.min(np.sum(tasks * background.tasks[:3], axis=1)) > 0.999


def test_a_changed_background_vector_file_is_refused() -> None:
    texts = open_world.background_texts(_world())
    with pytest.raises(ModelIntegrityError) as caught:
        open_world._shipped_vectors(b"not the shipped vectors", texts)
    assert caught.value.code == "model_integrity"


def test_shipped_vectors_serve_only_the_texts_they_were_made_from() -> None:
    folder = Path(open_world.__file__).parent / "background"
    data = (folder / open_world.BACKGROUND_VECTORS_FILE).read_bytes()
    texts = open_world.background_texts(_world())
    shipped = open_world._shipped_vectors(data, texts)
    assert shipped is not None and shipped[0] == get_embedder("minilm").model_id
    changed = dataclasses.replace(texts, everything=[*texts.everything[:-1], "another task"])
    assert open_world._shipped_vectors(data, changed) is None


def test_another_model_embeds_the_background_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(open_world, "_memo", {})
    fake = get_embedder("fake")
    background: Background = background_for(fake)
    assert background.tools.shape == (len(background.names), fake.dim)
    assert len(background.names) > 700 and background.tasks.shape[1] == fake.dim


def _world() -> dict[str, object]:
    folder = Path(open_world.__file__).parent / "background"
    doc: dict[str, object] = json.loads((folder / open_world.BACKGROUND_FILE).read_text())
    return doc


def test_best_of_ours_a_block_at_a_time_is_the_whole_product(
    demo: tuple[ToolIndex, VerifiedCards], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = demo[0].corpus
    tasks = background_for(corpus.embedder).tasks[:50]
    whole = corpus.tool_similarities(tasks).max(axis=1)
    monkeypatch.setattr(open_world, "_TOOL_BLOCK", 7)  # many blocks, the last one short
    np.testing.assert_allclose(open_world.best_of_ours(corpus, tasks), whole, atol=1e-6)
