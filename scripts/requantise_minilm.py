#!/usr/bin/env python3
"""Re-quantise a shipped 8-bit MiniLM export with 7-bit weights (same weights otherwise).

    git show 994a783:src/cartograph/index/embedders/minilm/model.onnx > /tmp/m8.onnx
    python scripts/requantise_minilm.py /tmp/m8.onnx --out DIR [--float FILE]

Run in a throwaway venv with ``onnx`` and ``onnxruntime`` (as ``export_minilm.py``).
Why: the fine-tuned model was shipped with full-range int8 weights, whose products
onnxruntime's AVX2 kernels saturate and AVX-512 VNNI's do not, so one file gave
other vectors on other CPUs (``export_minilm.quantise_per_channel``). Its float32
weights were not kept, and a retrain gives other weights on another machine, so
this script recovers float32 weights from the 8-bit file itself — each weight
MatMulInteger chain (DynamicQuantizeLinear → MatMulInteger → Cast → Mul) becomes a
float32 MatMul over ``W × scale`` — and quantises that graph again per channel
with 7-bit weights. Rounding twice costs a little fidelity against rounding the
lost float32 weights once (docs/embeddings.md, "One model on every CPU"); the
weights ranked by the generalisation protocol stay the ones shipped.
``--float`` also keeps the recovered float32 graph: the "float compute" variant
measured there (that run kept the int8 weights in the file and scaled them at
load; the products are the same). New exports (``export_minilm.py``, ``finetune_minilm.py``)
quantise their float32 weights to 7 bits directly. The output is deterministic:
the same input and versions give the same bytes. Like the export, it then checks
Cartograph's runtime on the new file against the float32 graph on the export's
validation texts and exits non-zero if any cosine falls below ``--min-cosine``.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import export_minilm  # beside this script: the quantisation and checksums it shares

REPO = Path(__file__).resolve().parents[1]
TOKENIZER = REPO / "src" / "cartograph" / "index" / "embedders" / "minilm" / "tokenizer.json"


def dequantise(source: Path, target: Path) -> int:
    """Write ``source`` with each weight MatMulInteger chain as a float32 MatMul; count them."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    constants = {init.name: init for init in graph.initializer}
    readers: dict[str, list[Any]] = collections.defaultdict(list)
    for node in graph.node:
        for name in node.input:
            readers[name].append(node)
    writer = {out: node for node in graph.node for out in node.output}

    dropped: set[int] = set()
    added: list[Any] = []
    weights: list[Any] = []
    for node in graph.node:
        if node.op_type != "MatMulInteger" or node.input[1] not in constants:
            continue
        quantised_input, weight, _input_zero, weight_zero = node.input
        activation = writer[quantised_input].input[0]  # DynamicQuantizeLinear's float input
        (cast,) = readers[node.output[0]]
        (rescale,) = readers[cast.output[0]]
        if cast.op_type != "Cast" or rescale.op_type != "Mul":
            raise ValueError(f"{node.name}: not a quantize_dynamic MatMul chain")
        scales = writer[next(name for name in rescale.input if name != cast.output[0])]
        weight_scale = next(name for name in scales.input if name in constants)
        zero = numpy_helper.to_array(constants[weight_zero]).astype(np.int32)
        scale = numpy_helper.to_array(constants[weight_scale]).astype(np.float32)
        quantised = numpy_helper.to_array(constants[weight]).astype(np.int32)
        name = weight.removesuffix("_quantized")
        recovered = ((quantised - zero) * scale).astype(np.float32)
        weights.append(numpy_helper.from_array(recovered, name))
        added.append(
            helper.make_node("MatMul", [activation, name], [rescale.output[0]], name=node.name)
        )
        dropped.update({id(node), id(cast), id(rescale), id(scales)})

    nodes = [node for node in graph.node if id(node) not in dropped] + added
    nodes = _without_unread(nodes, {out.name for out in graph.output})
    available = {i.name for i in graph.input} | set(constants) | {w.name for w in weights}
    del graph.node[:]
    graph.node.extend(_topological(nodes, available))
    read = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name in read]
    del graph.initializer[:]
    graph.initializer.extend(kept + weights)
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return len(added)


def _without_unread(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """Drop nodes none of whose outputs is read (the now idle DynamicQuantizeLinear ones)."""
    while True:
        read = {name for node in nodes for name in node.input} | outputs
        kept = [node for node in nodes if any(out in read for out in node.output)]
        if len(kept) == len(nodes):
            return kept
        nodes = kept


def _topological(nodes: list[Any], available: set[str]) -> list[Any]:
    """The nodes in an order where each runs after what it reads (ONNX requires it)."""
    ordered: list[Any] = []
    ready = available | {""}
    pending = list(nodes)
    while pending:
        runnable = [node for node in pending if all(name in ready for name in node.input)]
        if not runnable:
            raise ValueError("the rewritten graph has a cycle or an unknown input")
        for node in runnable:
            ordered.append(node)
            ready.update(node.output)
        done = {id(node) for node in runnable}
        pending = [node for node in pending if id(node) not in done]
    return ordered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", type=Path, help="an 8-bit model.onnx from export_minilm.py")
    parser.add_argument("--out", type=Path, required=True, help="folder for the 7-bit model")
    parser.add_argument("--float", type=Path, help="also keep the recovered float32 graph here")
    parser.add_argument("--min-cosine", type=float, default=0.98)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        recovered = Path(tmp) / "float"
        recovered.mkdir()
        count = dequantise(args.source, recovered / "model.onnx")
        export_minilm.quantise_per_channel(
            recovered / "model.onnx", args.out / "model.onnx", reduce_range=True
        )
        for folder in (recovered, args.out):  # the float32 graph loads for the check below
            shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
            export_minilm.write_checksums(folder)
        print(f"{count} weight MatMuls re-quantised with 7-bit weights", file=sys.stderr)
        print((args.out / "SHA256SUMS").read_text(encoding="utf-8"), end="")
        if args.float:
            shutil.copyfile(recovered / "model.onnx", args.float)
        return fidelity(recovered, args.out, args.min_cosine)


def fidelity(reference: Path, out: Path, min_cosine: float) -> int:
    """Cartograph's runtime on the 7-bit model against the float32 graph it came from."""
    import numpy as np

    sys.path.insert(0, str(REPO / "src"))
    from cartograph.index.embedders.minilm import MiniLMEmbedder

    texts = [text for text in export_minilm.validation_texts() if text.strip()]
    cosines = np.sum(MiniLMEmbedder(reference).embed(texts) * MiniLMEmbedder(out).embed(texts), 1)
    print(
        f"against the float32 graph, {len(texts)} texts: cosine min {cosines.min():.4f} "
        f"mean {cosines.mean():.4f}"
    )
    if cosines.min() < min_cosine:
        print(f"FAIL: some cosine below {min_cosine}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
