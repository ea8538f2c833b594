"""The query-vector LRU: a repeated task skips the model and gets exactly the same vectors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.embedders.minilm import MiniLMEmbedder
from cartograph.index.embedders.query_cache import QueryVectorCache
from cartograph.index.tool_index import ToolIndex

from .retrieval_fixtures import small_catalog

TASK = "get the weather forecast for Paris, then send it to the team on slack"


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())


def test_repeated_call_is_answered_from_the_cache_with_identical_vectors() -> None:
    cache, fake = QueryVectorCache(), FakeEmbedder()
    first = cache.embed(fake, ["weather in Paris", "send a message"])
    again = cache.embed(fake, ["weather in Paris", "send a message"])
    assert (cache.misses, cache.hits) == (1, 1)
    np.testing.assert_array_equal(again, fake.embed(["weather in Paris", "send a message"]))
    assert again is first


def test_cached_vectors_are_read_only_so_no_caller_can_corrupt_a_later_hit() -> None:
    vectors = QueryVectorCache().embed(FakeEmbedder(), ["weather in Paris"])
    with pytest.raises(ValueError, match="read-only"):
        vectors[0, 0] = 1.0


def test_entries_are_keyed_by_model_id_so_two_models_never_share_vectors() -> None:
    cache = QueryVectorCache()
    small = cache.embed(FakeEmbedder(64), ["weather in Paris"])
    large = cache.embed(FakeEmbedder(), ["weather in Paris"])
    assert cache.misses == 2
    assert small.shape == (1, 64)
    assert large.shape == (1, 1024)


def test_entries_are_keyed_by_the_whole_call_not_by_each_text() -> None:
    # A batching embedder's vectors depend on their neighbours: only the same call matches.
    cache, fake = QueryVectorCache(), FakeEmbedder()
    cache.embed(fake, ["weather in Paris", "send a message"])
    cache.embed(fake, ["weather in Paris"])
    assert (cache.misses, cache.hits) == (2, 0)


def test_the_least_recently_used_entry_is_evicted_at_capacity() -> None:
    cache, fake = QueryVectorCache(capacity=2), FakeEmbedder()
    cache.embed(fake, ["a b"])
    cache.embed(fake, ["c d"])
    cache.embed(fake, ["a b"])  # refreshes "a b"
    cache.embed(fake, ["e f"])  # evicts "c d"
    assert len(cache) == 2
    cache.embed(fake, ["a b"])
    assert cache.hits == 2
    cache.embed(fake, ["c d"])
    assert cache.misses == 4


def test_capacity_zero_stores_nothing() -> None:
    cache = QueryVectorCache(capacity=0)
    cache.embed(FakeEmbedder(), ["a b"])
    cache.embed(FakeEmbedder(), ["a b"])
    assert (len(cache), cache.hits, cache.misses) == (0, 0, 2)


def test_clear_forgets_entries_and_counts() -> None:
    cache = QueryVectorCache()
    cache.embed(FakeEmbedder(), ["a b"])
    cache.clear()
    assert (len(cache), cache.hits, cache.misses) == (0, 0, 0)


def test_a_repeated_task_ranks_exactly_as_with_no_cache(index: ToolIndex) -> None:
    cache = QueryVectorCache()
    uncached = dataclasses.replace(index.context(TASK), vector_cache=None)
    expected = index.rank(uncached, 5, depth=6)
    first = index.rank(dataclasses.replace(index.context(TASK), vector_cache=cache), 5, depth=6)
    again_ctx = dataclasses.replace(index.context(TASK), vector_cache=cache)
    again = index.rank(again_ctx, 5, depth=6)
    assert first == expected
    assert again == expected
    assert cache.hits >= 1
    np.testing.assert_array_equal(again_ctx.vectors(), uncached.vectors())


def test_task_and_steps_are_embedded_in_one_call_equal_to_separate_calls(
    index: ToolIndex,
) -> None:
    cache = QueryVectorCache()
    ctx = dataclasses.replace(index.context(TASK), vector_cache=cache)
    rows = ctx.vectors()
    assert cache.misses == 1  # the task and its steps: one embed call
    texts = [ctx.query.text, *(c.text for c in ctx.query.clauses)]
    assert len(texts) > 2
    separate = np.vstack([FakeEmbedder().embed([text]) for text in texts])
    np.testing.assert_array_equal(rows, separate)


def test_pooled_steps_are_cached_under_their_spans() -> None:
    minilm_index = ToolIndex.build(
        attest_with_unsafe_throwaway_key(small_catalog()), MiniLMEmbedder(), pooled_steps=True
    )
    cache = QueryVectorCache()
    first = dataclasses.replace(minilm_index.context(TASK), vector_cache=cache).vectors()
    again = dataclasses.replace(minilm_index.context(TASK), vector_cache=cache).vectors()
    assert (cache.misses, cache.hits) == (1, 1)
    np.testing.assert_array_equal(first, again)
