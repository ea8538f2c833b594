"""A restart after one card changed costs that card: the rest comes from the last snapshot.

The operator's path throughout: ``bootstrap`` writes signed cards and the
manifest, start-up loads them pinned by it (parsed on first use), and the
index is built through the persisted store. A card change is a re-run of
``bootstrap`` over a catalog in which one tool's description changed.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cartograph.cards.keys import SigningKey
from cartograph.cards.manifest import load_with_manifest
from cartograph.cards.store import CardStore
from cartograph.cards.trust import TrustSet
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog
from cartograph.index import snapshot as snapshot_module
from cartograph.index.cache import EmbeddingCache
from cartograph.index.embedders import get_embedder
from cartograph.index.embedders.base import Embedder, Vectors
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.index.entries import entries_from_cards
from cartograph.index.tool_index import ToolIndex
from cartograph.index.vector_store import VectorStore
from tests.cards.support import bootstrap, small_catalog, with_description
from tests.index.support import rankings, snapshot_files

CHANGED = ("files-2", "read_file")


class CountingEmbedder:
    """A real embedder that records every text it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def catalog() -> Catalog:
    """Four servers: the small catalog twice, under other names for the copies."""
    base = small_catalog().servers
    copies = [s.model_copy(update={"name": f"{s.name}-2"}) for s in base]
    return Catalog(servers=(*base, *copies))


class Operator:
    """A state directory, a signing key, and start-up as ``serve`` does it."""

    def __init__(self, state: Path) -> None:
        self.state, self.key = state, SigningKey.generate()
        self.store = CardStore(state)
        self.trust = TrustSet.of(self.key.public)

    def bootstrap(self, catalog: Catalog) -> None:
        bootstrap(self.store, self.key, catalog)

    def cards(self) -> VerifiedCards:
        report = load_with_manifest(self.store, self.trust)
        assert report is not None and not report.failures
        return report.verified

    def start(
        self, embedder: Embedder, cards: VerifiedCards | None = None, *, cache: bool = True
    ) -> ToolIndex:
        return ToolIndex.build(
            cards if cards is not None else self.cards(),
            embedder,
            cache=EmbeddingCache(self.state) if cache else None,
            store=VectorStore(self.state),
        )

    def texts_of(self, server: str) -> list[str]:
        """Every text the index embeds for ``server``'s card (both views of each tool)."""
        entries = entries_from_cards({server: self.cards()[server]})
        return [e.text for e in entries] + [e.name_text for e in entries]


def changed(text: str = "Read a whole file, in one go, from the disk.") -> Catalog:
    return with_description(catalog(), *CHANGED, text)


def test_after_one_card_changed_only_that_cards_tools_are_embedded(tmp_path: Path) -> None:
    operator = Operator(tmp_path)
    operator.bootstrap(catalog())
    operator.start(get_embedder("minilm"), cache=False)
    operator.bootstrap(changed())
    model = CountingEmbedder(get_embedder("minilm"))

    # No embedding cache: whatever is not embedded here came from stored vectors.
    index = operator.start(model, cache=False)

    assert sorted(model.texts) == sorted(operator.texts_of(CHANGED[0]))
    assert index.size == sum(len(s.tools) for s in changed().servers)
    hits = index.search("read a whole file in one go", k=3)
    assert (hits[0].server, hits[0].tool) == CHANGED


def test_a_restart_with_no_card_changed_embeds_nothing(tmp_path: Path) -> None:
    operator = Operator(tmp_path)
    operator.bootstrap(catalog())
    operator.start(FakeEmbedder(), cache=False)
    model = CountingEmbedder(FakeEmbedder())

    operator.start(model, cache=False)

    assert model.texts == []


def test_a_rebuild_after_one_card_changed_reads_no_card_but_it_and_its_name_twins(
    tmp_path: Path,
) -> None:
    """The changed card's twin ("files", whose tools have the same names) is read too:
    whether a name is another server's copy is judged on both cards (index/name_copies.py)."""
    operator = Operator(tmp_path)
    operator.bootstrap(catalog())
    operator.start(FakeEmbedder())
    operator.bootstrap(changed())
    cards = operator.cards()  # hashed against the manifest; parsed only when first used
    twin = CHANGED[0].removesuffix("-2")
    for server in cards:
        if server not in (CHANGED[0], twin):  # a build that read these would refuse them now
            operator.store.path_for(server).write_bytes(b"{}")

    index = operator.start(FakeEmbedder(), cards)

    assert index.size == sum(len(s.tools) for s in changed().servers)
    hits = index.search("read a whole file in one go", k=3)
    assert (hits[0].server, hits[0].tool) == CHANGED


def test_an_index_built_from_the_last_snapshot_ranks_as_one_built_from_scratch(
    tmp_path: Path,
) -> None:
    operator = Operator(tmp_path / "kept")
    operator.bootstrap(catalog())
    operator.start(FakeEmbedder())
    operator.bootstrap(changed())
    incremental = operator.start(FakeEmbedder())
    # The same cards in a state directory without any snapshot or vector block.
    scratch_state = tmp_path / "scratch"
    shutil.copytree(operator.state, scratch_state)
    shutil.rmtree(scratch_state / "index")
    scratch = Operator(scratch_state)
    scratch.trust = operator.trust

    fresh = scratch.start(FakeEmbedder())

    assert incremental.keys() == fresh.keys()
    assert np.array_equal(
        np.asarray(incremental.corpus.tool_vectors), np.asarray(fresh.corpus.tool_vectors)
    )
    assert rankings(incremental) == rankings(fresh)


def test_a_new_server_is_added_and_a_removed_one_dropped_without_rebuilding_the_rest(
    tmp_path: Path,
) -> None:
    operator = Operator(tmp_path)
    operator.bootstrap(catalog())
    operator.start(FakeEmbedder(), cache=False)
    operator.store.path_for("weather").unlink()
    operator.bootstrap(catalog())  # re-adds weather as a new card; others unchanged
    operator.store.path_for("files").unlink()
    operator.bootstrap(Catalog(servers=tuple(s for s in catalog().servers if s.name != "files")))
    model = CountingEmbedder(FakeEmbedder())

    index = operator.start(model, cache=False)

    keys = index.corpus.keys
    assert sorted({server for server, _ in keys}) == ["files-2", "weather", "weather-2"]
    # The re-added card is a new version (a new digest): only it is embedded.
    assert sorted(model.texts) == sorted(operator.texts_of("weather"))


@pytest.mark.promise("P-REL-9")
def test_a_crash_while_saving_the_rebuilt_index_leaves_the_last_snapshot_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator = Operator(tmp_path)
    operator.bootstrap(catalog())
    before = rankings(operator.start(FakeEmbedder()))
    kept = {p: p.read_bytes() for p in snapshot_files(tmp_path)}
    operator.bootstrap(changed())
    real = snapshot_module._write_corpus

    def crash(folder: Path, *args: object) -> None:
        real(folder, *args)  # type: ignore[arg-type]
        raise OSError("disk full")  # after every file, before the rename

    monkeypatch.setattr(snapshot_module, "_write_corpus", crash)
    operator.start(FakeEmbedder())  # serves; the snapshot is not saved
    monkeypatch.undo()

    assert {p: p.read_bytes() for p in snapshot_files(tmp_path)} == kept
    assert not [p for p in (tmp_path / "index").rglob(".serving-*")]
    # The next start builds from that snapshot again, and saves.
    after = operator.start(FakeEmbedder())
    assert after.search("read a whole file in one go", k=1)[0].tool == CHANGED[1]
    assert len({p.parent for p in snapshot_files(tmp_path) if p.name == "meta.json"}) == 2
    assert before != rankings(after)


def test_a_damaged_snapshot_is_never_copied_from(tmp_path: Path) -> None:
    operator = Operator(tmp_path)
    operator.bootstrap(catalog())
    operator.start(FakeEmbedder())
    names = next(p for p in snapshot_files(tmp_path) if p.name == "names.json")
    names.write_text(names.read_text().replace("read_file", "evil_tool"), encoding="utf-8")
    operator.bootstrap(changed())

    index = operator.start(FakeEmbedder())

    keys = index.corpus.keys
    assert all(tool != "evil_tool" for _, tool in keys)
    assert ("files", "read_file") in keys
