"""Lexical scoring over card text: BM25 per field (via ``bm25s``) and Jaccard.

A tool's name, its description and its argument summary say different things
with different reliability (a name is short and dense with meaning, an
argument list names what the tool consumes), so each field gets its own BM25
index and the rankers weight them. Server text gets an index of its own, one
document per server, which is the server-level lexical evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import bm25s
import numpy as np
import numpy.typing as npt

from cartograph.index.text import tokenize

Scores = npt.NDArray[np.float64]

BM25_K1: Final = 1.2
BM25_B: Final = 0.75
# bm25s cannot index an empty document; this token occurs in no query.
_EMPTY_DOC: Final = "\x00"


class FieldIndex:
    """BM25 over one field of every document (one row per document)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._size = len(texts)
        self._bm25 = bm25s.BM25(k1=BM25_K1, b=BM25_B)
        corpus = [tokenize(t) or [_EMPTY_DOC] for t in texts]
        if corpus:
            self._bm25.index(corpus, show_progress=False)

    def scores(self, tokens: Sequence[str]) -> Scores:
        """BM25 of every document for ``tokens`` (zeros when nothing matches)."""
        if not tokens or not self._size:
            return np.zeros(self._size)
        return np.asarray(self._bm25.get_scores(list(tokens)), dtype=np.float64)


class JaccardIndex:
    """The paper's keyword baseline: |Q ∩ D| / |Q ∪ D| over token sets."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._sets = [frozenset(tokenize(t)) for t in texts]

    def scores(self, tokens: Sequence[str]) -> Scores:
        query = frozenset(tokens)
        out = np.zeros(len(self._sets))
        if not query:
            return out
        for row, doc in enumerate(self._sets):
            union = len(query | doc)
            out[row] = len(query & doc) / union if union else 0.0
        return out
