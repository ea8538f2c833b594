"""Embedders: the fake used by ranker tests, and the registry."""

from __future__ import annotations

import numpy as np
import pytest

from cartograph.errors import RetrievalError
from cartograph.index.embedders import (
    Embedder,
    FakeEmbedder,
    embedder_names,
    get_embedder,
)


def _cos(embedder: Embedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b])
    return float(va @ vb)


def test_fake_embedder_is_deterministic_across_instances() -> None:
    texts = ["Search the web", "create a GitHub issue"]
    np.testing.assert_array_equal(FakeEmbedder().embed(texts), FakeEmbedder().embed(texts))


def test_fake_embedder_rows_are_unit_float32_even_for_empty_text() -> None:
    vectors = FakeEmbedder().embed(["", "!!!", "hello world", "x " * 500])
    assert vectors.dtype == np.float32
    assert vectors.shape == (4, 1024)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_fake_embedder_texts_sharing_words_are_closer_than_unrelated_ones() -> None:
    fake = FakeEmbedder()
    shared = _cos(fake, "read a file from disk", "read the file contents")
    unrelated = _cos(fake, "read a file from disk", "send slack message")
    assert shared > 0.4
    assert shared > unrelated + 0.3


def test_fake_embedder_ignores_case_and_punctuation() -> None:
    fake = FakeEmbedder()
    assert _cos(fake, "Git Branch!", "git branch") == pytest.approx(1.0)


def test_fake_embedder_on_no_texts_returns_empty_matrix() -> None:
    assert FakeEmbedder(32).embed([]).shape == (0, 32)


def test_fake_embedder_model_id_names_its_dimension() -> None:
    assert FakeEmbedder().model_id == "fake-hash-v1"
    assert FakeEmbedder(64).model_id != FakeEmbedder().model_id
    assert FakeEmbedder(64).dim == 64


def test_fake_embedder_satisfies_the_embedder_protocol() -> None:
    assert isinstance(FakeEmbedder(), Embedder)


def test_get_embedder_returns_one_shared_instance_per_name() -> None:
    assert get_embedder("fake") is get_embedder("fake")
    assert isinstance(get_embedder("fake"), FakeEmbedder)


def test_get_embedder_rejects_unknown_names_with_a_code() -> None:
    with pytest.raises(RetrievalError) as info:
        get_embedder("word2vec")
    assert info.value.code == "unknown_embedder"


def test_embedder_names_lists_the_default_and_fake() -> None:
    assert {"fake", "minilm"} <= set(embedder_names())
