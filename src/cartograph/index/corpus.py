"""Everything a ranker needs, precomputed once per index build.

Per-query work must not grow with anything but the index itself, so tool
vectors, normalised server centroids, the server of each tool and the
lexical field indexes are all built here, before the first query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from cartograph.index.columns import ToolColumns, columns_from_entries
from cartograph.index.embedders.base import Embedder, Vectors
from cartograph.index.entries import IndexEntry, ToolKey
from cartograph.index.lexical import FieldIndex, JaccardIndex

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LexicalFields:
    """BM25 per tool field, BM25 per server document, Jaccard over tool text.

    ``examples`` indexes the card's example tasks and synonyms on their own:
    they are phrased the way agents ask, so a ranker weights them apart from
    the description (``full`` does not include them). ``purpose`` is the name and
    description without the arguments: what the tool is for, which the hybrid
    weights apart from the argument text (values a tool takes).
    """

    full: FieldIndex
    name: FieldIndex
    description: FieldIndex
    purpose: FieldIndex
    arguments: FieldIndex
    server: FieldIndex
    jaccard: JaccardIndex
    examples: FieldIndex


@dataclass(frozen=True)
class Corpus:
    """The precomputed index, columnar: tool names, vectors, centroids, lexical fields.

    A tool is a position: its name is ``tool_names[i]`` and its server
    ``servers[tool_server[i]]``. No per-tool object is kept (at 100k tools one
    per tool was hundreds of MB); the text a ranker needs is already in the
    lexical indexes and vectors, and what ``discover`` serves comes from the
    verified card of each answered tool.
    """

    servers: tuple[str, ...]
    tool_server: IntArray
    tool_names: tuple[str, ...]
    tool_vectors: Vectors
    centroids: Vectors
    lexical: LexicalFields
    embedder: Embedder
    server_order: IntArray = field(init=False, repr=False)
    """Tool positions grouped by server (stable): server i's tools are
    ``server_order[server_starts[i]:server_starts[i + 1]]``."""
    server_starts: IntArray = field(init=False, repr=False)
    sample: IntArray = field(init=False, repr=False)
    """:data:`SAMPLE_TOOLS` positions spread evenly over the index (every
    position when it is smaller); their rows are kept as float32 at scale."""
    _sample_rows: Vectors | None = field(init=False, repr=False)
    _sample_slot: IntArray | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        order = np.argsort(self.tool_server, kind="stable").astype(np.int64)
        counts = np.bincount(self.tool_server, minlength=len(self.servers))
        object.__setattr__(self, "server_order", order)
        object.__setattr__(self, "server_starts", np.concatenate(([0], np.cumsum(counts))))
        size = len(self.tool_names)
        sample = spread_sample(size)
        object.__setattr__(self, "sample", sample)
        rows = slot = None
        if self.tool_vectors.dtype == np.float16 and size:
            # Built here, at load, not on the first query: the hybrid's prefilter
            # scores the whole sample on every query (hybrid.candidates), and a
            # float16 row costs more to convert than to multiply.
            rows = np.ascontiguousarray(self.tool_vectors[sample], dtype=np.float32)
            slot = np.full(size, -1, dtype=np.int64)
            slot[sample] = np.arange(len(sample))
        object.__setattr__(self, "_sample_rows", rows)
        object.__setattr__(self, "_sample_slot", slot)

    def tools_of(self, servers: IntArray) -> IntArray:
        """Positions of every tool of ``servers`` (server positions), in position order."""
        spans = [
            self.server_order[self.server_starts[s] : self.server_starts[s + 1]] for s in servers
        ]
        if not spans:
            return np.zeros(0, dtype=np.int64)
        out: IntArray = np.sort(np.concatenate(spans))
        return out

    @property
    def size(self) -> int:
        return len(self.tool_names)

    def key(self, position: int) -> ToolKey:
        """(server, tool) of the tool at ``position``."""
        return (self.servers[int(self.tool_server[position])], self.tool_names[position])

    def tool_similarities(self, queries: Vectors) -> Vectors:
        """Cosine of each query row to every tool (queries × tools)."""
        return _similarities(queries, self.tool_vectors)

    def tool_similarities_at(self, queries: Vectors, positions: IntArray) -> Vectors:
        """Cosine of each query row to the tools at ``positions`` only (queries × positions).

        The rows are gathered from the (memory-mapped, float16 at scale)
        matrix and converted to float32, which costs more than the product
        itself (~2 ns a value); the :attr:`sample`'s rows are float32 already.
        """
        queries = np.atleast_2d(queries)
        slot, resident = self._sample_slot, self._sample_rows
        if slot is None or resident is None:
            return matrix_product(
                queries, np.asarray(self.tool_vectors[positions], dtype=np.float32)
            )
        slots = slot[positions]
        kept = slots >= 0
        out = np.empty((queries.shape[0], len(positions)), dtype=np.float32)
        if 4 * int(kept.sum()) >= len(resident):  # the hybrid's candidates: the whole sample
            out[:, kept] = matrix_product(queries, resident)[:, slots[kept]]
        elif kept.any():
            out[:, kept] = matrix_product(queries, resident[slots[kept]])
        other = positions[~kept]
        out[:, ~kept] = matrix_product(
            queries, np.asarray(self.tool_vectors[other], dtype=np.float32)
        )
        return out

    def server_similarities(self, queries: Vectors) -> Vectors:
        """Cosine of each query row to every server centroid (queries × servers)."""
        if self.tool_vectors.dtype == np.float16:  # at scale: one thread, BLAS speed
            return matrix_product(np.atleast_2d(queries), self.centroids)
        return _similarities(queries, self.centroids)

    @property
    def keys(self) -> list[ToolKey]:
        servers = [self.servers[i] for i in self.tool_server.tolist()]
        return list(zip(servers, self.tool_names, strict=True))

    def server_sizes(self) -> IntArray:
        return np.bincount(self.tool_server, minlength=len(self.servers)).astype(np.int64)


def build_corpus(entries: Sequence[IndexEntry], embedder: Embedder, vectors: Vectors) -> Corpus:
    """Assemble a corpus from entries and their (already computed) vectors."""
    return corpus_from_columns(columns_from_entries(entries), embedder, vectors)


def corpus_from_columns(
    columns: ToolColumns,
    embedder: Embedder,
    vectors: Vectors,
    lexical: LexicalFields | None = None,
) -> Corpus:
    """Assemble a corpus from token columns and the tools' vectors (same order).

    ``lexical`` is :func:`lexical_fields` of ``columns`` when the caller fitted it already.
    """
    return Corpus(
        servers=columns.servers,
        tool_server=columns.tool_server,
        tool_names=columns.tool_names,
        tool_vectors=serving_matrix(vectors),
        centroids=server_centroids(vectors, columns.tool_server, len(columns.servers)),
        lexical=lexical if lexical is not None else lexical_fields(columns),
        embedder=embedder,
    )


# Below this many rows a query's similarities are computed without BLAS: its
# thread pool costs more to wake (up to ~10 ms on a busy two-core machine,
# measured) than the whole product (~0.1 ms at 527 tools) takes in one thread.
SMALL_PRODUCT_ROWS: Final = 20_000


SAMPLE_TOOLS: Final = 4096
"""Size of :attr:`Corpus.sample` (the hybrid prefilter's spread tools)."""

LARGE_CORPUS_TOOLS: Final = SMALL_PRODUCT_ROWS
"""From this many tools the matrix is kept as float16 (as stored; memory-mapped
when loaded, :mod:`cartograph.index.snapshot`): half the memory, and the
hybrid's prefilter only gathers the rows it scores."""
_CHUNK_ROWS: Final = 8192


def spread_sample(size: int, count: int = SAMPLE_TOOLS) -> IntArray:
    """Up to ``count`` distinct positions spread evenly over ``range(size)``, ascending.

    What ``np.unique`` of the spread gives, without ``np.unique``, which imports
    numpy.ma (~0.1 s of CPU at start-up): the positions come sorted, so dropping
    a repeat is one comparison with its neighbour.
    """
    spread = np.linspace(0, size - 1, min(count, size)).astype(np.int64)
    if not size:
        return spread
    keep = np.concatenate(([True], spread[1:] != spread[:-1]))
    out: IntArray = spread[keep]
    return out


def serving_matrix(vectors: Vectors) -> Vectors:
    """The tool matrix as served: float32 for small indexes, float16 from LARGE_CORPUS_TOOLS.

    The values are the same either way: tool vectors are already rounded to
    float16 when stored (:func:`~cartograph.index.vector_store.stored`).
    """
    if vectors.shape[0] < LARGE_CORPUS_TOOLS:
        return vectors
    out: Vectors = np.asarray(vectors, dtype=np.float16)
    return out


def _similarities(queries: Vectors, rows: Vectors) -> Vectors:
    """``queries @ rows.T``, single-threaded for small indexes (see SMALL_PRODUCT_ROWS).

    A float16 matrix is converted a chunk at a time (numpy has no float16
    BLAS; converting it whole would hold a float32 copy at the peak).
    """
    queries = np.atleast_2d(queries)
    if rows.dtype == np.float16:
        out = np.empty((queries.shape[0], rows.shape[0]), dtype=np.float32)
        for start in range(0, rows.shape[0], _CHUNK_ROWS):
            chunk = np.asarray(rows[start : start + _CHUNK_ROWS], dtype=np.float32)
            out[:, start : start + chunk.shape[0]] = matrix_product(queries, chunk)
        return out
    if rows.shape[0] <= SMALL_PRODUCT_ROWS:
        small: Vectors = np.einsum("qd,td->qt", queries, rows)
        return small
    return matrix_product(queries, rows)


PRODUCT_BLOCK: Final = 1 << 17
"""Multiply-adds per BLAS call in :func:`_product`. OpenBLAS runs a product
this small on the calling thread; a larger one (from ~2^19 for one query row,
~2^20 for four) wakes its thread pool, whose spinning cost 5–20× the
product's own CPU time on a busy two-core machine (measured: 4 queries ×
384 × 512 rows 0.02 ms, × 768 rows 1.4 ms of CPU)."""


def matrix_product(queries: Vectors, rows: Vectors) -> Vectors:
    """``queries @ rows.T`` (queries × rows) in row blocks of at most PRODUCT_BLOCK multiply-adds.

    A matrix product on one thread, at BLAS speed: numpy's ``einsum`` is ~5×
    slower per multiply-add, a single large BLAS call wakes every thread.
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    rows = np.asarray(rows, dtype=np.float32)
    out = np.empty((rows.shape[0], queries.shape[0]), dtype=np.float32)
    transposed = queries.T
    step = max(1, PRODUCT_BLOCK // max(1, queries.size))
    for start in range(0, rows.shape[0], step):
        np.matmul(rows[start : start + step], transposed, out=out[start : start + step])
    product: Vectors = np.ascontiguousarray(out.T)
    return product


def server_centroids(vectors: Vectors, tool_server: IntArray, servers: int) -> Vectors:
    """μᵢ = mean of server i's tool vectors (paper eq. 6), scaled to unit length.

    Scaling does not change the centroid's direction, so the cosine of eq. 7
    becomes a plain dot product at query time.
    """
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    sums = np.zeros((servers, dim), dtype=np.float64)
    # A chunk at a time: a float64 copy of a 100k-row (float16) matrix is 300 MB.
    for start in range(0, len(tool_server), _CHUNK_ROWS):
        chunk = np.asarray(vectors[start : start + _CHUNK_ROWS], dtype=np.float64)
        np.add.at(sums, tool_server[start : start + _CHUNK_ROWS], chunk)
    counts = np.bincount(tool_server, minlength=servers).astype(np.float64)
    means = sums / np.maximum(counts, 1.0)[:, None]
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    return (means / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)


def lexical_fields(columns: ToolColumns) -> LexicalFields:
    """Every BM25 field and the Jaccard postings, from the columns' token ids.

    Joined fields are the union of their parts' occurrences (``full`` is name,
    description and arguments; ``purpose`` name and description): no token
    spans the space that joins two fields (tested), and every scorer counts
    tokens as a bag.
    """
    size, words = columns.size, columns.vocabulary

    def bm25(*fields: str) -> FieldIndex:
        # One field's occurrences at a time: at 100k tools each is tens of MB.
        return FieldIndex.from_keys(_occurrences(columns, fields), words, size)

    servers = len(columns.servers)
    server = FieldIndex.from_keys(columns.server_docs.keys(servers), words, servers)
    jaccard = JaccardIndex.from_keys(
        _occurrences(columns, ("name", "description", "arguments")), words, size
    )
    return LexicalFields(
        full=bm25("name", "description", "arguments"),
        name=bm25("name"),
        description=bm25("description"),
        purpose=bm25("name", "description"),
        arguments=bm25("arguments"),
        server=server,
        jaccard=jaccard,
        examples=bm25("examples"),
    )


def _occurrences(columns: ToolColumns, fields: Sequence[str]) -> IntArray:
    """Every occurrence in ``fields`` of every tool, as ``token id * tools + tool`` keys."""
    keys: IntArray = np.concatenate([columns.fields[f].keys(columns.size) for f in fields])
    return keys
