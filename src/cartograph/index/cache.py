"""An on-disk embedding cache keyed by (model id, sha256(text)).

Embedding 100k tool texts takes minutes on two cores, while the texts behind
them (verified card text) rarely change. The cache makes a restart, or a
rebuild after one card changed, embed only the texts it has never seen.

Layout: ``<state_dir>/embeddings/<model>/seg-<digest>.bin``, one folder per
model id, holding append-only *segments*. A segment is one file, written in
one atomic step (P-REL-9), so a crash leaves whole segments or none::

    magic "CGEMB1\\0\\0" | uint32 dim | uint32 count | count × 32-byte sha256 | count × dim float32

Only the keys are held in memory; vectors are read from disk in bounded
chunks straight into the caller's matrix, so serving 100k cached vectors costs
one copy of them, not two. Once there are more than :data:`MAX_SEGMENTS`,
every segment but the largest is merged, which keeps merges small.

The cache is only an accelerator: a segment that cannot be read, or whose
shape does not fit the model, is ignored (its texts are embedded again), and
the index can always be rebuilt from the cards alone. So is one over
:data:`MAX_SEGMENT_BYTES`, a device or FIFO, or a symlink out of its folder
(P-REL-13, logged with its code): a segment's size must be exactly what its
header says before its keys are read.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

import numpy as np

from cartograph.errors import StateFileError
from cartograph.fsutil import PRIVATE_FILE_MODE, atomic_write_bytes, open_bounded
from cartograph.index.embedders.base import Embedder, Vectors

CACHE_DIRNAME: Final = "embeddings"
DEFAULT_BATCH_SIZE: Final = 64
# Write a segment at least this often while embedding a large miss set, so an
# interrupted 15-minute build keeps most of its work.
DEFAULT_FLUSH_EVERY: Final = 8192
MAX_SEGMENTS: Final = 32
READ_CHUNK_ROWS: Final = 4096
MAX_SEGMENT_BYTES: Final = 4 * 1024 * 1024 * 1024
"""One segment: ~2.7M texts at 384 dimensions (a merge of 100k tools' two views is 310 MB)."""

_MAGIC: Final = b"CGEMB1\x00\x00"
_HEADER: Final = struct.Struct("<8sII")
_KEY_BYTES: Final = 32

_log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` over the texts that needed embedding."""


def text_key(text: str) -> bytes:
    """The cache key of a text: its raw sha256 digest over UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass
class CacheStats:
    """What the last :meth:`EmbeddingCache.embed_cached` call did; tests read it.

    ``misses`` counts distinct texts sent to the embedder; ``hits`` every other
    input row (found on disk or repeated within the call).
    """

    hits: int = 0
    misses: int = 0


@dataclass(frozen=True)
class _Segment:
    path: Path
    count: int

    def vectors_offset(self) -> int:
        return _HEADER.size + self.count * _KEY_BYTES


class _ModelStore:
    """One model id's segments: an in-memory key index over vectors kept on disk."""

    def __init__(self, folder: Path, dim: int) -> None:
        self.folder = folder
        self.dim = dim
        self.where: dict[bytes, tuple[int, int]] = {}  # key -> (segment, row)
        self.segments: list[_Segment] = []
        for path in sorted(folder.glob("seg-*.bin")):
            self._open_segment(path)

    def _open_segment(self, path: Path) -> None:
        keys = _read_keys(path, self.dim)
        if keys is None:
            return
        number = len(self.segments)
        self.segments.append(_Segment(path, len(keys)))
        for row, key in enumerate(keys):
            self.where[key] = (number, row)

    def gather(self, keys: Sequence[bytes], out: Vectors) -> None:
        """Fill ``out[i]`` with the stored vector of ``keys[i]`` (all must be present)."""
        wanted: dict[int, list[tuple[int, int]]] = {}
        for position, key in enumerate(keys):
            segment, row = self.where[key]
            wanted.setdefault(segment, []).append((row, position))
        for segment, pairs in wanted.items():
            _read_rows(self.segments[segment], self.dim, pairs, out)

    def add(self, keys: Sequence[bytes], vectors: Vectors) -> None:
        if keys:
            self._open_written(_write_segment(self.folder, keys, vectors))
        if len(self.segments) > MAX_SEGMENTS:
            self._merge_small()

    def _open_written(self, path: Path) -> None:
        known = {segment.path for segment in self.segments}
        if path not in known:  # the same texts written twice get the same name
            self._open_segment(path)

    def _merge_small(self) -> None:
        """Merge every segment but the largest: bounded work, fewer files."""
        largest = max(self.segments, key=lambda s: s.count)
        small = [s for s in self.segments if s is not largest]
        keys = [k for k, (seg, _) in self.where.items() if self.segments[seg] is not largest]
        vectors = np.zeros((len(keys), self.dim), dtype=np.float32)
        self.gather(keys, vectors)
        merged = _write_segment(self.folder, keys, vectors)
        for segment in small:
            if segment.path != merged:
                with contextlib.suppress(FileNotFoundError):
                    segment.path.unlink()
        self.segments, self.where = [], {}
        for path in (largest.path, merged):
            self._open_segment(path)


def _write_segment(folder: Path, keys: Sequence[bytes], vectors: Vectors) -> Path:
    key_blob = b"".join(keys)
    # Content-addressed name: two processes writing the same texts agree.
    path = folder / f"seg-{hashlib.sha256(key_blob).hexdigest()[:24]}.bin"
    body = np.ascontiguousarray(vectors, dtype="<f4").tobytes()
    header = _HEADER.pack(_MAGIC, vectors.shape[1], len(keys))
    atomic_write_bytes(path, header + key_blob + body, mode=PRIVATE_FILE_MODE)
    return path


def _read_keys(path: Path, dim: int) -> list[bytes] | None:
    """A segment's keys, or None if the file is damaged or holds another width."""
    try:
        with _open_segment_file(path) as handle:
            head = handle.read(_HEADER.size)
            if len(head) != _HEADER.size:
                return None
            magic, seg_dim, count = _HEADER.unpack(head)
            expected = _HEADER.size + count * (_KEY_BYTES + 4 * seg_dim)
            if magic != _MAGIC or seg_dim != dim or os.fstat(handle.fileno()).st_size != expected:
                return None
            blob = handle.read(count * _KEY_BYTES)
    except StateFileError as exc:
        _log.warning("embedding cache segment not used: %s (%s)", exc.message, exc.code)
        return None
    except OSError:
        return None
    return [blob[i : i + _KEY_BYTES] for i in range(0, len(blob), _KEY_BYTES)]


def _open_segment_file(path: Path) -> contextlib.AbstractContextManager[BinaryIO]:
    return open_bounded(path, MAX_SEGMENT_BYTES, inside=path.parent)


def _read_rows(segment: _Segment, dim: int, pairs: list[tuple[int, int]], out: Vectors) -> None:
    """Copy the (row -> position) pairs of one segment into ``out``, a chunk at a time."""
    pairs.sort()
    row_bytes = 4 * dim
    with _open_segment_file(segment.path) as handle:
        start = 0
        while start < len(pairs):
            first = pairs[start][0]
            stop = start
            while stop < len(pairs) and pairs[stop][0] < first + READ_CHUNK_ROWS:
                stop += 1
            last = pairs[stop - 1][0]
            handle.seek(segment.vectors_offset() + first * row_bytes)
            block = np.frombuffer(handle.read((last - first + 1) * row_bytes), dtype="<f4")
            block = block.reshape(last - first + 1, dim)
            rows = np.fromiter((r - first for r, _ in pairs[start:stop]), dtype=np.int64)
            positions = np.fromiter((p for _, p in pairs[start:stop]), dtype=np.int64)
            out[positions] = block[rows]
            start = stop


class EmbeddingCache:
    """Embeds texts through an :class:`Embedder`, never the same text twice.

    One instance may serve several embedders; each model id has its own
    folder, so switching models never returns another model's vectors.
    """

    def __init__(self, state_dir: Path) -> None:
        self.root = Path(state_dir) / CACHE_DIRNAME
        self.last = CacheStats()
        self._stores: dict[str, _ModelStore] = {}

    def folder_for(self, model_id: str) -> Path:
        """The folder holding ``model_id``'s segments (a readable, collision-free name)."""
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id).strip("._")[:64] or "model"
        digest = hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:12]
        return self.root / f"{slug}-{digest}"

    def embed_cached(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        flush_every: int = DEFAULT_FLUSH_EVERY,
        progress: ProgressCallback | None = None,
    ) -> Vectors:
        """Vectors for ``texts`` in order, embedding only texts the cache lacks.

        Duplicate texts within one call are embedded once. New vectors are
        persisted before this returns.
        """
        store = self._store(embedder)
        keys = [text_key(text) for text in texts]
        missing = _unique_missing(keys, texts, store.where)
        self.last = CacheStats(hits=len(texts) - len(missing), misses=len(missing))
        _embed_missing(embedder, store, missing, batch_size, flush_every, progress)
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        store.gather(keys, out)
        return out

    def embed_summed(
        self,
        embedder: Embedder,
        views: Sequence[Sequence[str]],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        flush_every: int = DEFAULT_FLUSH_EVERY,
        progress: ProgressCallback | None = None,
    ) -> Vectors:
        """Row i is the sum, over ``views``, of the vector of ``view[i]`` (views equally long).

        Same caching as :meth:`embed_cached` (every missing text of every view
        is embedded in one pass, so ``progress`` runs once), but only the sum
        is ever a full matrix: each view's cached rows are added into it a
        chunk at a time. At 100k tools and two views that is one 150 MB
        matrix at the peak instead of three.
        """
        rows = len(views[0]) if views else 0
        if any(len(view) != rows for view in views):
            raise ValueError("views must be equally long")
        store = self._store(embedder)
        keys = [[text_key(text) for text in view] for view in views]
        flat_keys = [key for view_keys in keys for key in view_keys]
        flat_texts = [text for view in views for text in view]
        missing = _unique_missing(flat_keys, flat_texts, store.where)
        self.last = CacheStats(hits=len(flat_texts) - len(missing), misses=len(missing))
        _embed_missing(embedder, store, missing, batch_size, flush_every, progress)
        out = np.zeros((rows, embedder.dim), dtype=np.float32)
        chunk = np.empty((min(rows, READ_CHUNK_ROWS), embedder.dim), dtype=np.float32)
        for view_keys in keys:
            for start in range(0, rows, READ_CHUNK_ROWS):
                part = chunk[: len(view_keys[start : start + READ_CHUNK_ROWS])]
                store.gather(view_keys[start : start + READ_CHUNK_ROWS], part)
                out[start : start + len(part)] += part
        return out

    def _store(self, embedder: Embedder) -> _ModelStore:
        store = self._stores.get(embedder.model_id)
        if store is None:
            store = _ModelStore(self.folder_for(embedder.model_id), embedder.dim)
            self._stores[embedder.model_id] = store
        return store


def _embed_missing(
    embedder: Embedder,
    store: _ModelStore,
    missing: dict[bytes, str],
    batch_size: int,
    flush_every: int,
    progress: ProgressCallback | None,
) -> None:
    items = list(missing.items())
    total = len(items)
    pending_keys: list[bytes] = []
    pending: list[Vectors] = []
    for start in range(0, total, batch_size):
        chunk = items[start : start + batch_size]
        pending.append(embedder.embed([text for _, text in chunk]))
        pending_keys.extend(key for key, _ in chunk)
        if len(pending_keys) >= flush_every:
            store.add(pending_keys, np.concatenate(pending))
            pending_keys, pending = [], []
        if progress is not None:
            progress(min(start + batch_size, total), total)
    if pending_keys:
        store.add(pending_keys, np.concatenate(pending))


def _unique_missing(
    keys: Sequence[bytes], texts: Sequence[str], known: dict[bytes, tuple[int, int]]
) -> dict[bytes, str]:
    missing: dict[bytes, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in known and key not in missing:
            missing[key] = text
    return missing


__all__ = ["CacheStats", "EmbeddingCache", "ProgressCallback", "text_key"]
