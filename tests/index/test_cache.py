"""The embedding cache: an unchanged text is never embedded twice, even across restarts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cartograph.index import cache as cache_module
from cartograph.index.cache import MAX_SEGMENTS, EmbeddingCache, text_key
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.embedders.base import Vectors


class CountingEmbedder:
    """Wraps the fake embedder and records every text it is asked to embed."""

    def __init__(self, dim: int = 64, model_id: str | None = None) -> None:
        self._inner = FakeEmbedder(dim)
        self._model_id = model_id or self._inner.model_id
        self.seen: list[str] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen.extend(texts)
        return self._inner.embed(texts)


def test_cached_vectors_equal_direct_embedding_in_input_order(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    texts = ["read a file", "send an email", "read a file", "list git branches"]
    vectors = EmbeddingCache(tmp_path).embed_cached(embedder, texts)
    np.testing.assert_array_equal(vectors, FakeEmbedder(64).embed(texts))
    assert vectors.dtype == np.float32


def test_duplicate_texts_in_one_call_are_embedded_once(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path)
    cache.embed_cached(embedder, ["a", "b", "a", "a"])
    assert sorted(embedder.seen) == ["a", "b"]
    assert (cache.last.hits, cache.last.misses) == (2, 2)


@pytest.mark.promise("P-REL-9")
def test_unchanged_text_is_not_reembedded_after_a_restart(tmp_path: Path) -> None:
    first = CountingEmbedder()
    before = EmbeddingCache(tmp_path).embed_cached(first, ["weather forecast", "git branch"])
    restarted = CountingEmbedder()
    cache = EmbeddingCache(tmp_path)  # a new process: nothing in memory
    after = cache.embed_cached(restarted, ["git branch", "weather forecast", "new card text"])
    assert restarted.seen == ["new card text"]
    np.testing.assert_array_equal(after[:2], before[::-1])
    assert (cache.last.hits, cache.last.misses) == (2, 1)


def test_a_different_model_id_never_gets_another_models_vectors(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path).embed_cached(CountingEmbedder(model_id="model-a"), ["same text"])
    other = CountingEmbedder(model_id="model-b")
    EmbeddingCache(tmp_path).embed_cached(other, ["same text"])
    assert other.seen == ["same text"]


def test_model_ids_with_path_characters_stay_inside_the_cache_folder(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    folder = cache.folder_for("../../etc/evil model")
    assert folder.parent == tmp_path / "embeddings"
    assert folder != cache.folder_for("___etc_evil model")


def test_corrupt_segment_is_ignored_and_its_texts_reembedded(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    embedder = CountingEmbedder()
    cache.embed_cached(embedder, ["alpha", "beta"])
    for segment in cache.folder_for(embedder.model_id).glob("seg-*.bin"):
        segment.write_bytes(b"CGEMB1\x00\x00 truncated")
    again = CountingEmbedder()
    vectors = EmbeddingCache(tmp_path).embed_cached(again, ["alpha", "beta"])
    assert again.seen == ["alpha", "beta"]
    np.testing.assert_array_equal(vectors, FakeEmbedder(64).embed(["alpha", "beta"]))


def test_segment_with_wrong_dimension_is_ignored(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path).embed_cached(CountingEmbedder(dim=64, model_id="m"), ["alpha"])
    wider = CountingEmbedder(dim=128, model_id="m")
    vectors = EmbeddingCache(tmp_path).embed_cached(wider, ["alpha"])
    assert wider.seen == ["alpha"]
    assert vectors.shape == (1, 128)


def test_many_small_writes_are_compacted_without_losing_vectors(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    embedder = CountingEmbedder()
    texts = [f"tool number {i}" for i in range(MAX_SEGMENTS + 5)]
    for text in texts:
        cache.embed_cached(embedder, [text])
    folder = cache.folder_for(embedder.model_id)
    assert len(list(folder.glob("seg-*.bin"))) <= MAX_SEGMENTS
    fresh = CountingEmbedder()
    vectors = EmbeddingCache(tmp_path).embed_cached(fresh, texts)
    assert fresh.seen == []
    np.testing.assert_array_equal(vectors, FakeEmbedder(64).embed(texts))


def test_large_miss_sets_are_flushed_in_segments_and_report_progress(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    embedder = CountingEmbedder()
    calls: list[tuple[int, int]] = []
    texts = [f"text {i}" for i in range(10)]
    cache.embed_cached(
        embedder, texts, batch_size=3, flush_every=4, progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(3, 10), (6, 10), (9, 10), (10, 10)]
    assert len(list(cache.folder_for(embedder.model_id).glob("seg-*.bin"))) == 2


def test_empty_input_returns_an_empty_matrix_of_the_model_width(tmp_path: Path) -> None:
    vectors = EmbeddingCache(tmp_path).embed_cached(CountingEmbedder(dim=64), [])
    assert vectors.shape == (0, 64)
    assert not (tmp_path / "embeddings").exists() or not any((tmp_path / "embeddings").rglob("*"))


def test_text_key_is_the_sha256_of_utf8_text() -> None:
    expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert text_key("abc").hex() == expected


def test_vectors_are_read_back_correctly_across_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "READ_CHUNK_ROWS", 3)
    texts = [f"chunked text {i}" for i in range(11)]
    EmbeddingCache(tmp_path).embed_cached(CountingEmbedder(), texts)
    shuffled = texts[::-1][::2] + texts[1::3]
    fresh = CountingEmbedder()
    vectors = EmbeddingCache(tmp_path).embed_cached(fresh, shuffled)
    assert fresh.seen == []
    np.testing.assert_array_equal(vectors, FakeEmbedder(64).embed(shuffled))


def test_summed_views_equal_the_sum_of_direct_embeddings_and_embed_each_text_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "READ_CHUNK_ROWS", 2)  # several chunks per view
    embedder = CountingEmbedder()
    texts = ["read a file", "send an email", "list git branches", "chart a table", "read a file"]
    names = ["read file", "send email", "read a file", "chart", "read file"]
    summed = EmbeddingCache(tmp_path).embed_summed(embedder, [texts, names])
    direct = FakeEmbedder(64)
    np.testing.assert_allclose(summed, direct.embed(texts) + direct.embed(names), atol=1e-6)
    assert sorted(embedder.seen) == sorted(set(texts) | set(names))

    restarted = CountingEmbedder()
    again = EmbeddingCache(tmp_path).embed_summed(restarted, [texts, names])
    assert restarted.seen == []
    np.testing.assert_array_equal(again, summed)


def test_summed_views_of_different_lengths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="equally long"):
        EmbeddingCache(tmp_path).embed_summed(CountingEmbedder(), [["a", "b"], ["a"]])
