"""all-MiniLM-L6-v2 on onnxruntime + tokenizers + numpy, no torch at run time.

The vectors match sentence-transformers' (cosine >= 0.98, checked by
``scripts/export_minilm.py``): WordPiece tokens truncated at the model's
256-token window, the int8 per-channel ONNX transformer, then mean pooling over
the attention mask and L2 normalisation done here in float32 numpy.

The files are pinned by ``SHA256SUMS`` and checked once, at first use, so a
corrupted or swapped model fails loudly instead of ranking with wrong vectors.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from cartograph.errors import ModelIntegrityError
from cartograph.index.embedders.base import Vectors

MODEL_DIR: Final = Path(__file__).resolve().parent
MODEL_FILE: Final = "model.onnx"
TOKENIZER_FILE: Final = "tokenizer.json"
CHECKSUMS_FILE: Final = "SHA256SUMS"
# Names the weights *and* what changes the vectors: quantisation and pooling.
MINILM_MODEL_ID: Final = "cartograph/minilm-l6-tools-1:onnx-int8-per-channel-7bit:mean-l2"
MINILM_DIM: Final = 384
MAX_TOKENS: Final = 256  # sentence-transformers' max_seq_length for this model
PAD_TOKEN: Final = "[PAD]"  # noqa: S105 - a vocabulary entry, not a secret
# Two intra-op threads. One thread costs ~14 % less CPU per task (a query's
# texts are 10-40 tokens, too short for the per-operator hand-off to pay), but
# on a busy two-core machine a single runnable thread gets a fraction of a core:
# measured, a task's embedding waited 3-4x its CPU time with one thread and
# about its CPU time with two (same vectors either way; docs/embeddings.md).
DEFAULT_THREADS: Final = 2
# One text per run by default. The int8 graph quantises activations with one
# scale per *tensor*, so in a batch a text's vector depends on its neighbours
# (cosine ~0.98-0.99 to its solo vector). Solo runs make a vector a pure
# function of its text, which the (model id, text hash) cache and reproducible
# rebuilds rely on. Batches of 4+ roughly double bulk throughput on two cores;
# pass ``batch_size`` for one-off bulk jobs that do not feed the cache.
DEFAULT_BATCH_SIZE: Final = 1


@dataclass(frozen=True)
class ModelSpec:
    """What differs between two mean-pooled sentence-transformers encoders run here."""

    model_id: str
    dim: int
    max_tokens: int
    pad_token: str


MINILM_SPEC: Final = ModelSpec(MINILM_MODEL_ID, MINILM_DIM, MAX_TOKENS, PAD_TOKEN)


class MiniLMEmbedder:
    """The shipped MiniLM model; loads lazily, once, on the first ``embed``."""

    def __init__(
        self,
        model_dir: Path = MODEL_DIR,
        *,
        threads: int = DEFAULT_THREADS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        spec: ModelSpec = MINILM_SPEC,
    ) -> None:
        self._spec = spec
        self._model_dir = Path(model_dir)
        self._threads = threads
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._runtime: _Runtime | None = None

    @property
    def model_id(self) -> str:
        # Batched vectors differ slightly from solo ones, so they never share a cache entry.
        if self._batch_size == 1:
            return self._spec.model_id
        return f"{self._spec.model_id}:batch{self._batch_size}"

    @property
    def dim(self) -> int:
        return self._spec.dim

    def load(self) -> None:
        """Verify and load the model now (otherwise the first ``embed`` does)."""
        self._get_runtime()

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._spec.dim), dtype=np.float32)
        if not texts:
            return out
        runtime = self._get_runtime()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = runtime.embed_batch([texts[i] for i in rows])
        return out

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Vectors:
        """Row 0: ``text`` exactly as :meth:`embed` gives it; row i: span i pooled in context.

        One model run: a span's vector is the mean of the token vectors whose
        characters lie inside it ("late chunking"), so a task's steps cost no
        extra inference. Used for query steps, never for cached tool vectors.
        """
        return self._get_runtime().embed_spans(text, spans)

    def _get_runtime(self) -> _Runtime:
        if self._runtime is None:
            with self._lock:
                if self._runtime is None:
                    self._runtime = _Runtime(self._model_dir, self._threads, self._spec)
        return self._runtime


class _Runtime:
    """The loaded tokenizer and onnxruntime session."""

    def __init__(self, model_dir: Path, threads: int, spec: ModelSpec = MINILM_SPEC) -> None:
        verify_model_files(model_dir)
        self.tokenizer = _load_tokenizer(model_dir / TOKENIZER_FILE, spec)
        self.session = _load_session(model_dir / MODEL_FILE, threads)
        self.input_names = {node.name for node in self.session.get_inputs()}

    def embed_batch(self, texts: list[str]) -> Vectors:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (tokens,) = self.session.run(["last_hidden_state"], feeds)
        return mean_pool_normalise(np.asarray(tokens, dtype=np.float32), mask)

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Vectors:
        encoding = self.tokenizer.encode(text)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feeds = {"input_ids": np.array([encoding.ids], dtype=np.int64), "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.array([encoding.type_ids], dtype=np.int64)
        (tokens,) = self.session.run(["last_hidden_state"], feeds)
        offsets = np.array(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        real = (np.array(encoding.special_tokens_mask) == 0) & (offsets[:, 1] > offsets[:, 0])
        rows = [mask[0]]
        for start, end in spans:
            inside = real & (offsets[:, 0] >= start) & (offsets[:, 1] <= end)
            rows.append(inside.astype(np.int64) if inside.any() else mask[0])
        weights = np.vstack(rows)
        repeated = np.repeat(np.asarray(tokens, dtype=np.float32), len(weights), axis=0)
        return mean_pool_normalise(repeated, weights)


def mean_pool_normalise(tokens: Vectors, mask: npt.NDArray[np.int64]) -> Vectors:
    """sentence-transformers' Pooling(mean) + Normalize, in float32.

    Padding tokens are excluded from the mean; the clamps match torch's
    (1e-9 on the token count, 1e-12 on the norm) so all-padding cannot divide by 0.
    """
    weights = mask.astype(np.float32)[:, :, None]
    summed = (tokens * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
    pooled = summed / counts
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
    result: Vectors = (pooled / norms).astype(np.float32, copy=False)
    return result


def verify_model_files(model_dir: Path) -> None:
    """Check every file listed in ``SHA256SUMS`` against its pinned digest.

    Raises ``ModelIntegrityError`` (code ``model_integrity``) naming the file
    that is missing or does not match.
    """
    sums = model_dir / CHECKSUMS_FILE
    pins = _read_pins(sums)
    for name in (MODEL_FILE, TOKENIZER_FILE):
        if name not in pins:
            raise ModelIntegrityError(
                f"{sums} does not pin {name}; reinstall cartograph",
                file=name,
            )
    for name, expected in pins.items():
        actual = _sha256_file(model_dir / name)
        if actual != expected:
            raise ModelIntegrityError(
                f"embedding model file {model_dir / name} fails its sha256 pin "
                f"(expected {expected}, got {actual}); the install is corrupted or "
                "was modified: reinstall cartograph",
                file=name,
                expected=expected,
                actual=actual,
            )


def _read_pins(sums: Path) -> dict[str, str]:
    try:
        lines = sums.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ModelIntegrityError(
            f"cannot read the model checksum file {sums} ({exc.strerror}); reinstall cartograph",
            file=CHECKSUMS_FILE,
        ) from exc
    pins: dict[str, str] = {}
    for line in lines:
        if line.strip():
            digest, _, name = line.strip().partition("  ")
            pins[name.lstrip("*")] = digest.lower()
    return pins


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ModelIntegrityError(
            f"cannot read embedding model file {path} ({exc.strerror}); reinstall cartograph",
            file=path.name,
        ) from exc
    return digest.hexdigest()


def _load_tokenizer(path: Path, spec: ModelSpec = MINILM_SPEC) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # The shipped tokenizer.json pads every input to 128 tokens; pad each batch
    # only to its longest member instead, and cut at the model's window.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=spec.max_tokens)
    pad_id = tokenizer.token_to_id(spec.pad_token)
    tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token=spec.pad_token)
    return tokenizer


def _load_session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # Threads that spin while idle steal CPU from the event loop on small machines.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


__all__ = [
    "MINILM_DIM",
    "MINILM_MODEL_ID",
    "MINILM_SPEC",
    "MODEL_DIR",
    "MiniLMEmbedder",
    "ModelSpec",
    "mean_pool_normalise",
    "verify_model_files",
]
