"""Embedders: the shipped MiniLM model and a deterministic fake for tests.

``get_embedder(name)`` is the one way the rest of Cartograph obtains an
embedder, so config can name one (``"minilm"``, the default, or ``"fake"``)
and the model file is loaded at most once per process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final

from cartograph import error_codes as codes
from cartograph.errors import RetrievalError
from cartograph.index.embedders.base import Embedder, Vectors
from cartograph.index.embedders.fake import FakeEmbedder

DEFAULT_EMBEDDER: Final = "minilm"


def _minilm() -> Embedder:
    # Imported here so `fake` users (unit tests) never import onnxruntime.
    from cartograph.index.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


_FACTORIES: Final[dict[str, Callable[[], Embedder]]] = {
    "fake": FakeEmbedder,
    "minilm": _minilm,
}


def embedder_names() -> list[str]:
    """Names accepted by :func:`get_embedder`, for config validation and `--help`."""
    return sorted(_FACTORIES)


@functools.cache
def get_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """The shared embedder instance called ``name``.

    Raises ``RetrievalError(code="unknown_embedder")`` for a name not in
    :func:`embedder_names`.
    """
    factory = _FACTORIES.get(name)
    if factory is None:
        raise RetrievalError(
            f"unknown embedder {name!r}; choose one of: {', '.join(embedder_names())}",
            code=codes.UNKNOWN_EMBEDDER,
            embedder=name,
        )
    return factory()


__all__ = [
    "DEFAULT_EMBEDDER",
    "Embedder",
    "FakeEmbedder",
    "Vectors",
    "embedder_names",
    "get_embedder",
]
