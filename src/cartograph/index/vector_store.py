"""The persisted index: each card's tool vectors, stored beside the cards.

A restart must not re-embed, re-hash or re-gather anything for a card that did
not change. So the final tool vectors (the normalised sum of each tool's two
dense views, :func:`~cartograph.index.tool_index.tool_vectors`) are stored
one *block* per card, in the card's entry order, under a key that names
everything the vectors depend on::

    <state_dir>/index/<model folder>/<key>.npy      (numpy .npy, float16, rows × dim)
    key = sha256(model id, the card's verified body digest, every text embedded)

Keying by the embedded texts as well as the card digest means a change to how
entry text is built from a card (a new card field, a new text view) can never
serve stale vectors: the key changes and the block is rebuilt. Blocks are
opened memory-mapped and copied once into the index's matrix. Float16 halves
the files; its cost on LiveMCPBench is measured by
``benchmarks/vector_precision.py`` (docs/embeddings.md).

Like the embedding cache, the store is only an accelerator: a block that
cannot be read or has the wrong shape is ignored and rebuilt (from the
embedding cache, so only texts never seen are embedded); so is one larger than
its shape needs, a device or FIFO, or a symlink out of ``<state_dir>/index``
(P-REL-13, logged with its code). Writes are atomic (P-REL-9). Blocks of cards
no longer served are not pruned (a few KB each).
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from cartograph.errors import StateFileError
from cartograph.fsutil import PRIVATE_FILE_MODE, atomic_write_bytes, check_bounded
from cartograph.index.embedders.base import Vectors

INDEX_DIRNAME: Final = "index"
STORED_DTYPE: Final = np.float16
BLOCK_SUFFIX: Final = ".npy"
_KEY_HEX: Final = 40
_NPY_HEADER_BYTES: Final = 64 * 1024
"""More than any .npy header numpy writes (its format caps a header at 65535 bytes in v1)."""
_log = logging.getLogger(__name__)


def block_key(model_id: str, card_digest: str, texts: Sequence[str]) -> str:
    """The key of one card's block: model, verified card digest and every embedded text."""
    digest = hashlib.sha256()
    for part in (model_id, card_digest, str(len(texts)), *texts):
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))  # length-prefixed: no ambiguity
        digest.update(data)
    return digest.hexdigest()[:_KEY_HEX]


def stored(vectors: Vectors) -> Vectors:
    """``vectors`` exactly as a block stores and returns them (float16 precision, float32 type).

    A freshly built index uses this too, so a restart ranks exactly as the run
    that wrote the blocks did.
    """
    out: Vectors = np.asarray(vectors).astype(STORED_DTYPE).astype(np.float32)
    return out


class VectorStore:
    """Blocks of stored tool vectors under ``<state_dir>/index`` (see module docstring)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.root = self.state_dir / INDEX_DIRNAME

    def folder_for(self, model_id: str) -> Path:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id).strip("._")[:64] or "model"
        return self.root / f"{slug}-{hashlib.sha256(model_id.encode()).hexdigest()[:12]}"

    def path_for(self, model_id: str, key: str) -> Path:
        return self.folder_for(model_id) / f"{key}{BLOCK_SUFFIX}"

    def load(self, model_id: str, key: str, rows: int, dim: int) -> Vectors | None:
        """The block memory-mapped, or None when it is absent, damaged or the wrong shape."""
        path = self.path_for(model_id, key)
        limit = _NPY_HEADER_BYTES + rows * dim * np.dtype(STORED_DTYPE).itemsize
        try:
            check_bounded(path, limit, inside=self.root)
            block = np.load(path, mmap_mode="r", allow_pickle=False)
        except StateFileError as exc:
            _log.warning("vector block not used, rebuilt: %s (%s)", exc.message, exc.code)
            return None
        except (OSError, ValueError, EOFError):
            return None
        if block.shape != (rows, dim) or block.dtype != STORED_DTYPE:
            return None
        out: Vectors = block
        return out

    def save(self, model_id: str, key: str, vectors: Vectors) -> None:
        """Write one block atomically (a crash leaves the old file or none)."""
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(vectors, dtype=STORED_DTYPE), allow_pickle=False)
        atomic_write_bytes(self.path_for(model_id, key), buffer.getvalue(), mode=PRIVATE_FILE_MODE)


__all__ = ["INDEX_DIRNAME", "STORED_DTYPE", "VectorStore", "block_key", "stored"]
