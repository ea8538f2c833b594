"""The persisted serving corpus: a restart loads the index instead of rebuilding it."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.errors import PersistedIndexError
from cartograph.index.embedders.base import Vectors
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.index.snapshot import SnapshotStore, snapshot_key
from tests.cards.support import small_catalog
from tests.index.support import build, rankings, snapshot_files


class RefusingEmbedder(FakeEmbedder):
    """The fake model that fails if anything asks it to embed a tool."""

    def __init__(self) -> None:
        super().__init__()
        self.allow_queries = True

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.allow_queries:
            raise AssertionError(f"embedded {texts[:2]} during the build")
        return super().embed(texts)


def drop_vector_blocks(state: Path) -> None:
    for block in (state / "index").glob("*/*.npy"):
        block.unlink()


def test_a_restart_loads_the_snapshot_and_ranks_exactly_as_the_fresh_build(
    tmp_path: Path,
) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    fresh = build(cards, tmp_path)
    # Without the per-card vector blocks and with a model that refuses tool
    # texts, only the snapshot can supply the index.
    drop_vector_blocks(tmp_path)
    model = RefusingEmbedder()
    model.allow_queries = False

    loaded = build(cards, tmp_path, model)
    model.allow_queries = True

    assert loaded.keys() == fresh.keys()
    assert np.array_equal(loaded.corpus.tool_vectors, fresh.corpus.tool_vectors)
    assert np.array_equal(loaded.corpus.centroids, fresh.corpus.centroids)
    assert rankings(loaded) == rankings(fresh)


def test_a_changed_vector_file_is_detected_and_the_index_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    fresh = build(cards, tmp_path)
    vectors = next(p for p in snapshot_files(tmp_path) if p.name == "vectors.npy")
    data = bytearray(vectors.read_bytes())
    data[-1] ^= 0xFF  # a flipped bit in the last vector: same shape, other ranking
    vectors.write_bytes(bytes(data))

    with caplog.at_level(logging.WARNING):
        rebuilt = build(cards, tmp_path)

    assert "persisted_index_damaged" in caplog.text
    assert rankings(rebuilt) == rankings(fresh)
    assert vectors.read_bytes() != bytes(data)  # the damaged snapshot was replaced


def test_loading_a_snapshot_with_a_changed_file_raises_persisted_index_damaged(
    tmp_path: Path,
) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    build(cards, tmp_path)
    model = FakeEmbedder()
    key = snapshot_key(model.model_id, model.dim, [(s, cards.digest(s)) for s in cards], ())
    tokens = next(p for p in snapshot_files(tmp_path) if p.name == "tools.json")
    tokens.write_text('["read_file"]', encoding="utf-8")

    with pytest.raises(PersistedIndexError) as info:
        SnapshotStore(tmp_path).load(model, key)

    assert info.value.code == "persisted_index_damaged"


def test_a_snapshot_missing_a_file_is_refused(tmp_path: Path) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    build(cards, tmp_path)
    model = FakeEmbedder()
    key = snapshot_key(model.model_id, model.dim, [(s, cards.digest(s)) for s in cards], ())
    next(p for p in snapshot_files(tmp_path) if p.parent.name == "examples").unlink()

    with pytest.raises(PersistedIndexError) as info:
        SnapshotStore(tmp_path).load(model, key)

    assert info.value.code == "persisted_index_damaged"


def test_a_changed_card_set_builds_a_new_snapshot_and_never_loads_the_stale_one(
    tmp_path: Path,
) -> None:
    catalog = small_catalog()
    cards = attest_with_unsafe_throwaway_key(catalog)
    build(cards, tmp_path)
    fewer = cards.subset([name for name in cards if name != "files"])

    index = build(fewer, tmp_path)

    assert "files" not in {server for server, _ in index.corpus.keys}
    assert len(list((tmp_path / "index").glob("*/serving-*"))) == 2


def test_the_key_names_the_model_the_cards_and_the_exclusions() -> None:
    cards = [("files", "d1"), ("time", "d2")]
    base = snapshot_key("model-a", 8, cards, ())
    assert snapshot_key("model-a", 8, list(reversed(cards)), ()) == base
    assert snapshot_key("model-b", 8, cards, ()) != base
    assert snapshot_key("model-a", 16, cards, ()) != base
    assert snapshot_key("model-a", 8, [("files", "d1"), ("time", "d3")], ()) != base
    assert snapshot_key("model-a", 8, cards, [("files", "read_file")]) != base


def test_an_excluded_tool_is_never_answered_even_if_the_snapshot_holds_it(
    tmp_path: Path,
) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    index = build(cards, tmp_path)
    best = index.corpus.key(index.rank("read a file", 1)[0][0])

    index.exclude = frozenset({best})

    assert best not in [index.corpus.key(i) for i, _ in index.rank("read a file", 5, depth=20)]


def test_a_record_naming_a_file_outside_the_snapshot_is_refused(tmp_path: Path) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    build(cards, tmp_path)
    model = FakeEmbedder()
    key = snapshot_key(model.model_id, model.dim, [(s, cards.digest(s)) for s in cards], ())
    meta_path = next(p for p in snapshot_files(tmp_path) if p.name == "meta.json")
    outside = tmp_path / "elsewhere.npy"
    outside.write_bytes(b"x")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["files"]["../../../elsewhere.npy"] = hashlib.sha256(b"x").hexdigest()
    meta_path.write_text(json.dumps(meta), encoding="utf-8")

    with pytest.raises(PersistedIndexError) as info:
        SnapshotStore(tmp_path).load(model, key)

    assert info.value.code == "persisted_index_damaged"
