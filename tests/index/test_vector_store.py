"""The persisted index: a restart never re-embeds an unchanged card."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.index.tool_index import ToolIndex
from cartograph.index.vector_store import STORED_DTYPE, VectorStore, block_key
from tests.cards.support import small_catalog
from tests.index.support import CountingEmbedder


def build(cards: VerifiedCards, state: Path, embedder: FakeEmbedder) -> ToolIndex:
    return ToolIndex.build(cards, embedder, store=VectorStore(state))


def _with_description(catalog: Catalog, server: str, text: str) -> Catalog:
    servers = []
    for s in catalog.servers:
        if s.name == server:
            tools = (s.tools[0].model_copy(update={"description": text}), *s.tools[1:])
            s = s.model_copy(update={"tools": tools})
        servers.append(s)
    return Catalog(servers=tuple(servers))


def test_a_restart_embeds_nothing_and_ranks_identically(tmp_path: Path) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    first_model, second_model = CountingEmbedder(), CountingEmbedder()

    first = build(cards, tmp_path, first_model)
    again = build(cards, tmp_path, second_model)

    assert first_model.texts and second_model.texts == []
    assert again.keys() == first.keys()
    assert np.array_equal(again.corpus.tool_vectors, first.corpus.tool_vectors)
    assert again.search("read a file", 3) == first.search("read a file", 3)


def test_only_a_changed_card_is_embedded_again(tmp_path: Path) -> None:
    catalog = small_catalog()
    before = attest_with_unsafe_throwaway_key(catalog)
    build(before, tmp_path, CountingEmbedder())
    changed = attest_with_unsafe_throwaway_key(
        _with_description(catalog, "files", "Write bytes to a path.")
    )
    others = [name for name in before if name != "files"]
    mixed = before.subset(others).merged(changed.subset(["files"]))
    model = CountingEmbedder()

    index = build(mixed, tmp_path, model)

    files_tools = len(mixed["files"].body.tools)
    assert len(model.texts) == 2 * files_tools  # both views of every tool of that card only
    served = index.keys()
    assert sorted({s for s, _ in served}) == sorted(mixed)


def test_excluded_tools_are_left_out_but_their_card_stays_stored(tmp_path: Path) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    hidden = ("files", cards["files"].body.tools[0].name)
    full = build(cards, tmp_path, CountingEmbedder())
    model = CountingEmbedder()

    index = ToolIndex.build(cards, model, store=VectorStore(tmp_path), exclude=[hidden])

    served = index.keys()
    assert hidden not in served and model.texts == []
    assert index.size == full.size - 1


def test_a_damaged_block_is_ignored_and_rebuilt(tmp_path: Path) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    build(cards, tmp_path, CountingEmbedder())
    blocks = sorted((tmp_path / "index").glob("*/*.npy"))  # per-card blocks, not the snapshot
    blocks[0].write_bytes(b"not a numpy file")
    for snapshot in (tmp_path / "index").glob("*/serving-*"):
        shutil.rmtree(snapshot)  # the serving snapshot would answer before any block is read
    model = CountingEmbedder()

    build(cards, tmp_path, model)

    assert 0 < len(model.texts) < 2 * cards.tool_count()
    assert np.load(blocks[0]).dtype == STORED_DTYPE


def test_the_block_key_names_the_model_the_card_and_every_embedded_text() -> None:
    base = block_key("model-a", "digest-1", ["a", "b"])
    assert block_key("model-a", "digest-1", ["a", "b"]) == base
    assert block_key("model-b", "digest-1", ["a", "b"]) != base
    assert block_key("model-a", "digest-2", ["a", "b"]) != base
    assert block_key("model-a", "digest-1", ["a", "c"]) != base
    assert block_key("model-a", "digest-1", ["ab"]) != block_key("model-a", "digest-1", ["a", "b"])
