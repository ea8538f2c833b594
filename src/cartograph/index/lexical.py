"""Lexical scoring over card text: BM25 per field (via ``bm25s``) and Jaccard.

A tool's name, its description and its argument summary say different things
with different reliability (a name is short and dense with meaning, an
argument list names what the tool consumes), so each field gets its own BM25
index and the rankers weight them. Server text gets an index of its own, one
document per server, which is the server-level lexical evidence.

``bm25s`` is imported only to build or save an index: a persisted one is read
straight from bm25s's files (its postings and vocabulary), because importing
bm25s pulls in scipy.sparse, whose numpy compatibility layer imports
``numpy.f2py`` and ``numpy.ma``: ~0.6 s of CPU before `serve` or the CLI's
``discover`` can answer from a snapshot that needs none of it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from cartograph.index.text import tokenize

if TYPE_CHECKING:
    import bm25s

Scores = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

BM25_K1: Final = 1.2
BM25_B: Final = 0.75
# bm25s cannot index an empty document; this token occurs in no query.
_EMPTY_DOC: Final = "\x00"
# bm25s's file names (``BM25.save``'s defaults), read here without bm25s.
_VOCAB_FILE: Final = "vocab.index.json"
_POSTINGS_FILES: Final = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")
_NONOCCURRENCE_FILE: Final = "nonoccurrence_array.index.npy"


class FieldIndex:
    """BM25 over one field of every document (one row per document)."""

    _size: int
    _bm25: bm25s.BM25 | None
    """The bm25s index when built here or scored by bm25s; None when read from its files."""
    _vocabulary: dict[str, int]
    _postings: tuple[npt.NDArray[Any], ...]

    def __init__(
        self, texts: Sequence[str] = (), *, tokens: Sequence[Sequence[str]] | None = None
    ) -> None:
        """Index ``texts``, or documents already tokenized (``tokens``, one list per row)."""
        documents = tokens if tokens is not None else [tokenize(t) for t in texts]
        docs, ids, vocabulary = _pairs(documents)
        built = FieldIndex.from_pairs(docs, ids, vocabulary, len(documents))
        self._size, self._bm25 = built._size, built._bm25
        self._vocabulary, self._postings = built._vocabulary, built._postings

    @classmethod
    def from_pairs(
        cls, docs: IntArray, ids: IntArray, vocabulary: Sequence[str], size: int
    ) -> FieldIndex:
        """BM25 over ``size`` documents where document ``docs[i]`` holds token ``ids[i]``.

        The score matrix is computed with a few numpy passes over the
        occurrences (bm25s's own build loops over documents in Python, ~40 s
        for seven fields at 100k tools). Same scores as bm25s's ``lucene``
        method: idf ``ln(1 + (N - df + 0.5) / (df + 0.5))`` rounded to float32,
        times ``tf / (k1 (1 - b + b dl / avgdl) + tf)``; an empty document is
        one occurrence of a token no query has, as bm25s needs.
        """
        return cls.from_keys(_keys(docs, ids, size), vocabulary, size)

    @classmethod
    def from_keys(cls, keys: IntArray, vocabulary: Sequence[str], size: int) -> FieldIndex:
        """:meth:`from_pairs` with each occurrence as one key, ``id * size + doc`` (any order).

        One int64 per occurrence instead of two: at 100k tools the joined
        field has ~3M occurrences, and its build's peak memory is a few
        copies of them.
        """
        return cls._of(_bm25(keys, vocabulary, size), size)

    @classmethod
    def _of(cls, bm25: bm25s.BM25, size: int) -> FieldIndex:
        out = cls.__new__(cls)
        out._size, out._bm25 = size, bm25
        out._vocabulary, out._postings = bm25.vocab_dict, _postings(bm25)
        return out

    @property
    def size(self) -> int:
        return self._size

    def save(self, folder: Path) -> None:
        """Write the index into ``folder`` (bm25s's own files; loaded memory-mapped)."""
        bm25 = self._bm25 if self._bm25 is not None else _bm25_of(self)
        bm25.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path, size: int) -> FieldIndex:
        """The index :meth:`save` wrote, its score arrays memory-mapped, not re-tokenised.

        Read without bm25s (see the module docstring): the same arrays and
        vocabulary ``bm25s.BM25.load(mmap=True)`` gives. A variant with a
        non-occurrence term (never built here) is left to bm25s to load and score.
        """
        if (folder / _NONOCCURRENCE_FILE).exists():
            import bm25s

            return cls._of(bm25s.BM25.load(str(folder), mmap=True, show_progress=False), size)
        out = cls.__new__(cls)
        out._size, out._bm25 = size, None
        out._vocabulary = json.loads((folder / _VOCAB_FILE).read_text(encoding="utf-8"))
        out._postings = tuple(
            np.asarray(np.load(folder / name, mmap_mode="r", allow_pickle=False))
            for name in _POSTINGS_FILES
        )
        return out

    def _variant(self) -> bm25s.BM25 | None:
        """The bm25s index when its scores are not a sum over postings (never built here)."""
        bm25 = self._bm25
        return bm25 if bm25 is not None and bm25.nonoccurrence_array is not None else None

    def scores(self, tokens: Sequence[str]) -> Scores:
        """BM25 of every document for ``tokens`` (zeros when nothing matches).

        Summed straight from bm25s's precomputed postings (token → documents,
        scores) in one ``bincount``, in float64: bm25s itself adds them with
        ``np.add.at`` into float32 and the rankers converted the result, ~3× the
        time at 100k tools. A token repeated in the query counts again, as in
        bm25s.
        """
        if not tokens or not self._size:
            return np.zeros(self._size)
        variant = self._variant()
        if variant is not None:  # a BM25 variant with a non-occurrence term
            return np.asarray(variant.get_scores(list(tokens)), dtype=np.float64)
        vocabulary = self._vocabulary
        ids = [vocabulary[t] for t in tokens if t in vocabulary]
        if not ids:
            return np.zeros(self._size)
        scores, documents_of, bounds = self._postings
        spans = [(int(bounds[i]), int(bounds[i + 1])) for i in ids]
        documents = np.concatenate([documents_of[a:b] for a, b in spans])
        values = np.concatenate([scores[a:b] for a, b in spans])
        return _summed(documents, values, self._size)

    def token_scores(self, tokens: Sequence[str], positions: IntArray) -> npt.NDArray[np.float64]:
        """BM25 of each of ``tokens`` alone for the documents at ``positions`` (tokens × positions).

        What each word of a query adds to a few documents' scores, read from
        the postings without a pass over every document: the head re-scoring
        (:mod:`cartograph.index.rankers.contrast`) asks where a tool's score
        comes from.
        """
        out = np.zeros((len(tokens), len(positions)))
        if not len(positions) or not self._size:
            return out
        variant = self._variant()
        if variant is not None:  # a BM25 variant with a non-occurrence term
            for row, token in enumerate(tokens):
                out[row] = np.asarray(variant.get_scores([token]), dtype=np.float64)[positions]
            return out
        # Each token's postings list its documents in ascending order (``_bm25``
        # builds them from sorted keys), so a few positions are found by
        # binary search: no pass over a common word's long postings.
        order = np.argsort(positions, kind="stable")
        wanted = np.asarray(positions)[order]
        scores, documents_of, bounds = self._postings
        for row, token in enumerate(tokens):
            i = self._vocabulary.get(token)
            if i is None:
                continue
            start, stop = int(bounds[i]), int(bounds[i + 1])
            documents = documents_of[start:stop]
            at = np.searchsorted(documents, wanted)
            found = at < len(documents)
            found[found] = documents[at[found]] == wanted[found]
            out[row, order[found]] = scores[start + at[found]]
        return out


def weighted_scores(fields: Sequence[tuple[FieldIndex, float]], tokens: Sequence[str]) -> Scores:
    """Σ weight × BM25 of several fields of the same documents, in one ``bincount``.

    What the hybrid's field-weighted BM25 adds up, without one array per
    field: at 100k tools each is 800 KB to fill, stack and add.
    """
    size = fields[0][0].size if fields else 0
    documents: list[npt.NDArray[Any]] = []
    values: list[npt.NDArray[np.float64]] = []
    for index, weight in fields:
        if weight == 0.0 or not tokens or not index.size:
            continue
        if index._variant() is not None:  # not a sum over postings
            documents.append(np.arange(index.size))
            values.append(weight * index.scores(tokens))
            continue
        vocabulary = index._vocabulary
        scores, documents_of, bounds = index._postings
        for i in (vocabulary[t] for t in tokens if t in vocabulary):
            start, stop = int(bounds[i]), int(bounds[i + 1])
            documents.append(documents_of[start:stop])
            values.append(weight * scores[start:stop].astype(np.float64))
    if not documents:
        return np.zeros(size)
    return _summed(np.concatenate(documents), np.concatenate(values), size)


def _summed(documents: npt.NDArray[Any], values: npt.NDArray[Any], size: int) -> Scores:
    """Each document's sum of ``values`` (float64; weighted ``bincount`` always is)."""
    return np.asarray(np.bincount(documents, weights=values, minlength=size), dtype=np.float64)


def _postings(bm25: bm25s.BM25) -> tuple[npt.NDArray[Any], ...]:
    """bm25s's (scores, documents, bounds) arrays as plain ndarrays.

    Loaded memory-mapped they are ``np.memmap``, whose Python-level
    ``__getitem__`` cost ~20 µs per slice, several per query token; a plain
    view of the same mapping slices at C speed.
    """
    postings = getattr(bm25, "scores", None)
    if not isinstance(postings, dict) or "indptr" not in postings:
        empty = np.zeros(0)
        return (empty, empty.astype(np.int64), np.zeros(1, dtype=np.int64))
    return tuple(np.asarray(postings[name]) for name in ("data", "indices", "indptr"))


class JaccardIndex:
    """The paper's keyword baseline: |Q ∩ D| / |Q ∪ D| over token sets.

    Token sets are kept as postings (token id → the documents holding it,
    int32), not as one Python set per document: at 100k tools that is ~8 MB
    instead of ~100 MB, and a query counts its overlaps with every document
    in one ``bincount`` instead of a Python loop over documents.
    """

    _vocabulary: dict[str, int]
    _sizes: IntArray
    _documents: npt.NDArray[np.int32]
    _starts: IntArray

    def __init__(
        self, texts: Sequence[str] = (), *, tokens: Sequence[Sequence[str]] | None = None
    ) -> None:
        documents = tokens if tokens is not None else [tokenize(t) for t in texts]
        docs, ids, vocabulary = _pairs(documents)
        built = JaccardIndex.from_pairs(docs, ids, vocabulary, len(documents))
        self._vocabulary, self._sizes = built._vocabulary, built._sizes
        self._documents, self._starts = built._documents, built._starts

    @classmethod
    def from_pairs(
        cls, docs: IntArray, ids: IntArray, vocabulary: Sequence[str], size: int
    ) -> JaccardIndex:
        """Postings over ``size`` documents where document ``docs[i]`` holds token ``ids[i]``."""
        return cls.from_keys(_keys(docs, ids, size), vocabulary, size)

    @classmethod
    def from_keys(cls, keys: IntArray, vocabulary: Sequence[str], size: int) -> JaccardIndex:
        """:meth:`from_pairs` with each occurrence as one key, ``id * size + doc``."""
        distinct, _ = _distinct_sorted(keys)
        used, local, docs = _split(distinct, size, len(vocabulary))
        del distinct
        out = cls.__new__(cls)
        out._vocabulary = {vocabulary[int(t)]: i for i, t in enumerate(used)}
        out._sizes = np.bincount(docs, minlength=size).astype(np.int64)
        out._documents = docs.astype(np.int32)  # sorted by token, then document
        counts = np.bincount(local, minlength=len(used))
        out._starts = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return out

    _ARRAYS: Final = ("sizes", "documents", "starts")

    def save(self, folder: Path) -> None:
        """Write the postings into ``folder`` (numpy arrays and the vocabulary as JSON)."""
        folder.mkdir(parents=True, exist_ok=True)
        for name in self._ARRAYS:
            np.save(folder / f"{name}.npy", getattr(self, f"_{name}"), allow_pickle=False)
        (folder / "vocabulary.json").write_text(json.dumps(self._vocabulary), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> JaccardIndex:
        """The postings :meth:`save` wrote, memory-mapped."""
        out = cls.__new__(cls)
        for name in cls._ARRAYS:
            setattr(out, f"_{name}", np.load(folder / f"{name}.npy", mmap_mode="r"))
        out._vocabulary = json.loads((folder / "vocabulary.json").read_text(encoding="utf-8"))
        return out

    def scores(self, tokens: Sequence[str]) -> Scores:
        query = set(tokens)
        out = np.zeros(len(self._sizes))
        if not query:
            return out
        known = [self._vocabulary[t] for t in query if t in self._vocabulary]
        postings = [self._documents[self._starts[i] : self._starts[i + 1]] for i in known]
        overlap = np.bincount(
            np.concatenate(postings) if postings else np.zeros(0, dtype=np.int32),
            minlength=len(self._sizes),
        ).astype(np.float64)
        union = len(query) + self._sizes - overlap
        np.divide(overlap, union, out=out, where=union > 0)
        return out


def _pairs(documents: Sequence[Sequence[str]]) -> tuple[IntArray, IntArray, list[str]]:
    """(document, token id) of every occurrence, and the vocabulary the ids index."""
    ids: dict[str, int] = {}
    flat = [ids.setdefault(t, len(ids)) for document in documents for t in document]
    lengths = np.fromiter((len(d) for d in documents), dtype=np.int64, count=len(documents))
    docs = np.repeat(np.arange(len(documents), dtype=np.int64), lengths)
    return docs, np.asarray(flat, dtype=np.int64), list(ids)


def _keys(docs: IntArray, ids: IntArray, size: int) -> IntArray:
    """One int64 key per occurrence: ``id * size + doc`` (sorting keys sorts by token, then doc)."""
    keys: IntArray = np.asarray(ids, dtype=np.int64) * max(size, 1)
    keys += np.asarray(docs, dtype=np.int64)
    return keys


def _distinct_sorted(keys: IntArray) -> tuple[IntArray, IntArray]:
    """The distinct keys, sorted, and how often each occurs (by sorting, in place on a copy).

    numpy's ``unique`` was ~10x slower here (hash based) and holds more copies.
    """
    keys = np.sort(keys)
    if not len(keys):
        return keys, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    counts = np.diff(np.append(starts, len(keys)))
    distinct: IntArray = keys[starts]
    return distinct, counts


def _split(distinct: IntArray, size: int, words: int) -> tuple[IntArray, IntArray, IntArray]:
    """(used token ids, each key's token as an index into them, each key's document)."""
    tokens = distinct // max(size, 1)
    docs = distinct - tokens * max(size, 1)
    seen = np.bincount(tokens, minlength=words) > 0
    used = np.flatnonzero(seen)
    remap = np.cumsum(seen) - 1
    return used, remap[tokens], docs


def _bm25(keys: IntArray, vocabulary: Sequence[str], size: int) -> bm25s.BM25:
    """A bm25s index with its score matrix computed here (see :meth:`FieldIndex.from_pairs`)."""
    step = max(size, 1)
    lengths = np.bincount(keys % step, minlength=size)
    empty = np.flatnonzero(lengths == 0)
    words = list(vocabulary)
    if len(empty):  # bm25s cannot index an empty document: one token no query has
        keys = np.concatenate((keys, len(words) * step + empty))
        words.append(_EMPTY_DOC)
        lengths[empty] = 1
    distinct, tf = _distinct_sorted(keys)
    used, tokens, rows = _split(distinct, size, len(words))
    del distinct
    df = np.bincount(tokens, minlength=len(used)).astype(np.float64)
    idf = np.log(1.0 + (size - df + 0.5) / (df + 0.5)).astype(np.float32)
    norm = BM25_K1 * ((1 - BM25_B) + BM25_B * lengths[rows] / lengths.mean()) if size else 0.0
    scores = idf[tokens] * (tf / (norm + tf))
    del norm, tf
    indptr = np.concatenate(([0], np.cumsum(df.astype(np.int64))))
    postings = (scores.astype(np.float32), rows.astype(np.int32), indptr.astype(np.int64))
    return _bm25_with(postings, {words[int(t)]: i for i, t in enumerate(used)}, size)


def _bm25_of(index: FieldIndex) -> bm25s.BM25:
    """The bm25s index of one read from its files, to save it again."""
    return _bm25_with(index._postings, dict(index._vocabulary), index.size)


def _bm25_with(
    postings: tuple[npt.NDArray[Any], ...], vocabulary: dict[str, int], size: int
) -> bm25s.BM25:
    """A bm25s ``lucene`` index holding these (scores, documents, bounds) postings."""
    import bm25s

    bm25 = bm25s.BM25(k1=BM25_K1, b=BM25_B)
    data, indices, indptr = postings
    bm25.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": size}
    bm25.vocab_dict = vocabulary
    bm25.nonoccurrence_array = None
    bm25.unique_token_ids_set = set(vocabulary.values())
    return bm25
