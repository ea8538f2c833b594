"""The default embedder: all-MiniLM-L6-v2, int8 ONNX, shipped inside the package.

The model file, its tokenizer and their sha256 pins live beside this module
(see ``NOTICE.md`` here and ``docs/embeddings.md``), so a plain
``pip install`` works offline and nothing is ever downloaded at run time.
"""

from __future__ import annotations

from cartograph.index.embedders.minilm.embedder import (
    MINILM_DIM,
    MINILM_MODEL_ID,
    MODEL_DIR,
    MiniLMEmbedder,
    verify_model_files,
)

__all__ = ["MINILM_DIM", "MINILM_MODEL_ID", "MODEL_DIR", "MiniLMEmbedder", "verify_model_files"]
