"""A linear query adapter: q -> normalise(q + A q), on the query side only.

A small map trained on licence-clean (query, tool) pairs can move a user's
phrasing toward the way tools are described, without re-embedding any tool.
Tool vectors are untouched, so an adapter can be switched on or off per index
at no build cost. ``benchmarks/train_query_adapter.py`` trains one on MetaTool
(MIT); none ships: for the earlier base MiniLM it did not help zero-shot on
LiveMCPBench or the demo single-step set (``docs/retrieval.md``), and the
shipped encoder is now fine-tuned on such pairs itself. A file carries its provenance
(data, seed, loss) and the model it was trained for, and an adapter refuses
an embedder whose ``model_id`` differs: its matrix means nothing elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from cartograph import error_codes as codes
from cartograph.errors import RetrievalError
from cartograph.index.embedders.base import Embedder, Vectors


class QueryAdapter:
    """``A`` (dim x dim) and what it was trained for; :meth:`apply` maps query rows."""

    def __init__(self, matrix: npt.NDArray[np.floating], *, model_id: str, provenance: str) -> None:
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise RetrievalError(
                f"a query adapter is a square matrix, got shape {matrix.shape}",
                code=codes.ADAPTER_BAD_SHAPE,
            )
        self.matrix = matrix.astype(np.float32)
        self.model_id = model_id
        self.provenance = provenance

    @classmethod
    def load(cls, path: Path) -> QueryAdapter:
        """An adapter written by ``benchmarks/train_query_adapter.py --out``."""
        try:
            with np.load(path, allow_pickle=False) as data:
                return cls(
                    data["matrix"],
                    model_id=str(data["model_id"]),
                    provenance=str(data["provenance"]),
                )
        except (OSError, KeyError, ValueError) as exc:
            raise RetrievalError(
                f"cannot read query adapter {path}: {exc}; re-run "
                "benchmarks/train_query_adapter.py --out to write it",
                code=codes.ADAPTER_UNREADABLE,
            ) from exc

    def check(self, embedder: Embedder) -> None:
        """Raise unless ``embedder`` is the model this adapter was trained on."""
        if embedder.model_id != self.model_id or embedder.dim != self.matrix.shape[0]:
            raise RetrievalError(
                f"query adapter was trained for {self.model_id} ({self.matrix.shape[0]} dims), "
                f"not {embedder.model_id} ({embedder.dim}); train one for this model or drop it",
                code=codes.ADAPTER_MODEL_MISMATCH,
            )

    def apply(self, vectors: Vectors) -> Vectors:
        """Each row q as normalise(q + A q)."""
        z = vectors + vectors @ self.matrix.T
        norms = np.linalg.norm(z, axis=-1, keepdims=True)
        out: Vectors = (z / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)
        return out
