"""The embedder protocol every ranker and Rift build on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows, so a dot product is a cosine.

    ``model_id`` names the model *and* anything that changes its vectors
    (quantisation, pooling); the embedding cache keys on it.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...
