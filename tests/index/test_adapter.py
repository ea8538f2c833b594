"""The query adapter: query side only, unit length, refused for another model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.errors import RetrievalError
from cartograph.index.adapter import QueryAdapter
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.tool_index import ToolIndex

from .retrieval_fixtures import small_catalog


def _random_adapter(dim: int, model_id: str) -> QueryAdapter:
    matrix = np.random.default_rng(1).normal(scale=0.1, size=(dim, dim))
    return QueryAdapter(matrix, model_id=model_id, provenance="test: random")


def test_adapted_query_vectors_stay_unit_length() -> None:
    rows = np.random.default_rng(0).normal(size=(3, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    out = _random_adapter(384, "any").apply(rows)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(out, rows)


def test_an_adapter_for_another_model_is_refused_with_its_code() -> None:
    index = ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())
    with pytest.raises(RetrievalError) as err:
        ToolIndex(index.corpus, query_adapter=_random_adapter(384, "another-model"))
    assert err.value.code == "adapter_model_mismatch"


def test_the_adapter_maps_queries_and_leaves_tool_vectors_alone() -> None:
    fake = FakeEmbedder()
    index = ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), fake)
    swap = np.eye(fake.dim, dtype=np.float32)[::-1] - np.eye(fake.dim, dtype=np.float32)
    adapter = QueryAdapter(swap, model_id=fake.model_id, provenance="test: reverse the axes")
    adapted = ToolIndex(index.corpus, query_adapter=adapter)
    task = "read a text file from disk"
    plain = index.context(task).whole_vector()
    assert np.allclose(adapted.context(task).whole_vector(), plain[::-1])
    assert adapted.corpus.tool_vectors is index.corpus.tool_vectors


def test_an_unreadable_adapter_file_says_how_to_rebuild_it(tmp_path: Path) -> None:
    bad = tmp_path / "adapter.npz"
    bad.write_bytes(b"not an npz")
    with pytest.raises(RetrievalError) as err:
        QueryAdapter.load(bad)
    assert err.value.code == "adapter_unreadable"
