"""A deterministic, dependency-free embedder for unit tests only.

Ranker tests need vectors whose geometry is predictable: texts that share
words should be close, texts that share none should be orthogonal-ish. Hashing
each lower-cased token into a fixed number of signed buckets (the "hashing
trick") gives exactly that, with no model file and no randomness, so a test
can reason about which tool must rank first. Never use it to serve real
queries: it knows nothing about synonyms or paraphrase.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Final

import numpy as np

from cartograph.index.embedders.base import Vectors

FAKE_MODEL_ID: Final = "fake-hash-v1"
DEFAULT_FAKE_DIM: Final = 1024

_TOKEN = re.compile(r"[a-z0-9]+")
# Every row must have unit norm (the protocol promises it), so an input with no
# tokens still maps somewhere: to this sentinel, which no real word produces.
_EMPTY_SENTINEL: Final = "\x00empty"


class FakeEmbedder:
    """Bag-of-words hashing embedder: same words, same direction."""

    def __init__(self, dim: int = DEFAULT_FAKE_DIM) -> None:
        if dim < 8:
            raise ValueError("FakeEmbedder needs at least 8 dimensions to keep collisions rare")
        self._dim = dim

    @property
    def model_id(self) -> str:
        # The dimension changes every vector, so it is part of the cache key.
        return FAKE_MODEL_ID if self._dim == DEFAULT_FAKE_DIM else f"{FAKE_MODEL_ID}-d{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._embed_one(text)
        return out

    def _embed_one(self, text: str) -> Vectors:
        vec = np.zeros(self._dim, dtype=np.float32)
        for token in _TOKEN.findall(text.lower()) or [_EMPTY_SENTINEL]:
            bucket, sign = self._bucket(token)
            vec[bucket] += sign
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:  # opposite-signed collisions cancelled out exactly
            vec[self._bucket(_EMPTY_SENTINEL)[0]] = 1.0
            return vec
        return vec / np.float32(norm)

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self._dim, 1.0 if (value >> 63) & 1 else -1.0


__all__ = ["DEFAULT_FAKE_DIM", "FAKE_MODEL_ID", "FakeEmbedder"]
