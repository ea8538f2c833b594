"""An on-disk embedding cache keyed by (model id, sha256(text)).

Embedding 100k tool texts takes minutes on two cores, while the texts behind
them (verified card text) rarely change. The cache makes a restart, or a
rebuild after one card changed, embed only the texts it has never seen.

Layout: ``<state_dir>/embeddings/<model>/seg-<digest>.npz``, one folder per
model id, holding append-only *segments*. Each segment is an ``.npz`` with
``keys`` (N × 32 raw sha256 digests) and ``vectors`` (N × dim float32), written
in one atomic step (P-REL-9), so a crash leaves whole segments or none, never
a half-written pair of files. Many small segments are merged into one once
there are more than :data:`MAX_SEGMENTS`.

The cache is only an accelerator: a segment that cannot be read, or whose
shape does not fit the model, is ignored (its texts are embedded again), and
the index can always be rebuilt from the cards alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from cartograph.fsutil import atomic_write_bytes
from cartograph.index.embedders.base import Embedder, Vectors

CACHE_DIRNAME: Final = "embeddings"
DEFAULT_BATCH_SIZE: Final = 64
# Write a segment at least this often while embedding a large miss set, so an
# interrupted 15-minute build keeps most of its work.
DEFAULT_FLUSH_EVERY: Final = 2048
MAX_SEGMENTS: Final = 16

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


class _ModelStore:
    """The loaded segments of one model id: digest -> vector."""

    def __init__(self, folder: Path, dim: int) -> None:
        self.folder = folder
        self.dim = dim
        self.rows: dict[bytes, npt.NDArray[np.float32]] = {}
        self.segments: list[Path] = []
        for path in sorted(folder.glob("seg-*.npz")):
            if self._load_segment(path):
                self.segments.append(path)

    def _load_segment(self, path: Path) -> bool:
        try:
            with np.load(path, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
            return False
        if keys.ndim != 2 or keys.shape[1] != 32 or vectors.shape != (len(keys), self.dim):
            return False
        vectors = vectors.astype(np.float32, copy=False)
        for key, vector in zip(keys, vectors, strict=True):
            self.rows[key.tobytes()] = vector
        return True

    def add(self, keys: Sequence[bytes], vectors: Vectors) -> None:
        if not keys:
            return
        for key, vector in zip(keys, vectors, strict=True):
            self.rows[key] = vector
        self.segments.append(self._write_segment(keys, vectors))
        if len(self.segments) > MAX_SEGMENTS:
            self._compact()

    def _write_segment(self, keys: Iterable[bytes], vectors: Vectors) -> Path:
        key_list = list(keys)
        key_array = np.frombuffer(b"".join(key_list), dtype=np.uint8).reshape(len(key_list), 32)
        # Content-addressed name: two processes writing the same texts agree.
        name = hashlib.sha256(key_array.tobytes()).hexdigest()[:24]
        path = self.folder / f"seg-{name}.npz"
        buffer = io.BytesIO()
        np.savez(buffer, keys=key_array, vectors=np.ascontiguousarray(vectors, dtype=np.float32))
        atomic_write_bytes(path, buffer.getvalue())
        return path

    def _compact(self) -> None:
        """Merge every segment into one, then drop the old ones."""
        old = list(self.segments)
        keys = list(self.rows)
        merged = np.stack([self.rows[key] for key in keys]).astype(np.float32, copy=False)
        new = self._write_segment(keys, merged)
        for path in old:
            if path != new:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        self.segments = [new]


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
        missing = _unique_missing(keys, texts, store.rows)
        self.last = CacheStats(hits=len(texts) - len(missing), misses=len(missing))
        self._embed_missing(embedder, store, missing, batch_size, flush_every, progress)
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.stack([store.rows[key] for key in keys]).astype(np.float32, copy=False)

    def _store(self, embedder: Embedder) -> _ModelStore:
        store = self._stores.get(embedder.model_id)
        if store is None:
            store = _ModelStore(self.folder_for(embedder.model_id), embedder.dim)
            self._stores[embedder.model_id] = store
        return store

    @staticmethod
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
    keys: Sequence[bytes], texts: Sequence[str], known: dict[bytes, npt.NDArray[np.float32]]
) -> dict[bytes, str]:
    missing: dict[bytes, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in known and key not in missing:
            missing[key] = text
    return missing


__all__ = ["CacheStats", "EmbeddingCache", "ProgressCallback", "text_key"]
