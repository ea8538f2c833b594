"""A small LRU of query embeddings, so a repeated task never runs the model again.

Agents repeat themselves: the same task after a failed call, a retry after a
timeout, a planner that asks again before each step. A task's embeddings (the
whole task and its steps) cost one model run per text, most of a warm
``discover``; looked up here they cost a dictionary probe.

The key is the embedder's ``model_id`` plus *every* text of one ``embed`` call
(and the spans, for pooled steps), not each text alone: a batching embedder's
vectors depend on their neighbours, so only the same call gives the same
vectors. That keeps a hit exactly what a miss would have computed. Entries are
read-only arrays; callers get them as they were stored and never write to them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Final

from cartograph.index.embedders.base import Embedder, Vectors

DEFAULT_QUERY_CACHE_ENTRIES: Final = 256
"""About 1.5 kB per text (384 float32): a full cache of multi-step tasks is ~2 MB."""


class QueryVectorCache:
    """A bounded, thread-safe LRU of query vectors keyed by (model id, texts)."""

    def __init__(self, capacity: int = DEFAULT_QUERY_CACHE_ENTRIES) -> None:
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Hashable, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> Vectors:
        """``embedder.embed(texts)``, from the cache when this exact call was made before."""
        return self.get_or_compute(
            (embedder.model_id, "embed", tuple(texts)), lambda: embedder.embed(texts)
        )

    def get_or_compute(self, key: Hashable, compute: Callable[[], Vectors]) -> Vectors:
        """The vectors stored under ``key``, else ``compute()``'s, stored read-only.

        The model runs outside the lock: two threads missing on one key both
        compute it (the same vectors), rather than every query waiting on one.
        """
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        vectors = compute()
        vectors.setflags(write=False)
        if self.capacity > 0:
            with self._lock:
                self._entries[key] = vectors
                self._entries.move_to_end(key)
                while len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)
        return vectors

    def clear(self) -> None:
        """Forget every entry (benchmarks measure first-seen tasks this way)."""
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0


QUERY_VECTORS: Final = QueryVectorCache()
"""The process's shared cache: every index's query contexts use it by default."""


__all__ = ["DEFAULT_QUERY_CACHE_ENTRIES", "QUERY_VECTORS", "QueryVectorCache"]
