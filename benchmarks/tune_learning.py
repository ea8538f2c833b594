"""Choose the learning parameters on the training data alone, new and repeated tasks apart.

    python benchmarks/train_sets.py          # once: the BFCL training half in bench format
    python benchmarks/tune_learning.py [--limit 2000] [--max-new-loss 0.005] [--json]

Sets: MetaTool (a seeded sample of ``--limit`` queries) and the BFCL training
half (``benchmarks/results/train/bfcl``). The zero-shot pass runs once per
set; each setting then replays the learner over it with *surfaced* feedback at
20 % noise. A task is *new* when no earlier task had its gold set. The rule:
among the settings whose new-task Hit@1 is within ``--max-new-loss`` of
zero-shot on every set, the one with the largest mean repeated-task Hit@1
gain. That is what ``LearningConfig``'s defaults are. Never run it on an
evaluation set (``bench/``): they measure the defaults, out of sample.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import load_queries
from cartograph.eval.learning import Replay, replay, zero_shot_pass
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex
from cartograph.learning.learner import LearningParams

ROOT = Path(__file__).resolve().parents[1]
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))
BFCL_TRAIN = ROOT / "benchmarks" / "results" / "train" / "bfcl"
GRID = {
    "min_similarity": (0.4, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9),
    "vote_weight": (1.0, 2.0),
    "text_weight": (0.0, 0.3, 0.6),
}


def zero_shot(catalog: Path, queries: Path, limit: int | None) -> Replay:
    rows = load_queries(queries)
    if limit is not None:
        random.Random(0).shuffle(rows)
        rows = rows[:limit]
    index = ToolIndex.build(
        attest_with_unsafe_throwaway_key(load_catalog(catalog)), get_embedder("minilm")
    )
    return zero_shot_pass(index, rows)


def gains(run: Replay, setting: dict[str, float]) -> dict[str, float]:
    params = LearningParams(capacity=len(run.queries), **setting)  # type: ignore[arg-type]
    report = replay(run, params=params, modes=("surfaced",))
    out: dict[str, float] = {}
    for part in ("new", "repeated"):
        zero, learned = report.split["zero-shot"].get(part), report.split["surfaced"].get(part)
        if zero and learned:
            out[part] = round(learned["Hit@1"].mean - zero["Hit@1"].mean, 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--limit", type=int, default=2000, help="MetaTool queries sampled")
    parser.add_argument("--max-new-loss", type=float, default=0.005)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (BFCL_TRAIN / "catalog.json").is_file():
        raise SystemExit("tune_learning: run benchmarks/train_sets.py first")
    runs = {
        "metatool": zero_shot(
            TRAIN / "metatool" / "catalog.json", TRAIN / "metatool" / "queries.jsonl", args.limit
        ),
        "bfcl-train": zero_shot(BFCL_TRAIN / "catalog.json", BFCL_TRAIN / "queries.jsonl", None),
    }
    results: list[dict[str, Any]] = []
    for values in itertools.product(*GRID.values()):
        setting = dict(zip(GRID, values, strict=True))
        line: dict[str, Any] = {"params": setting}
        line.update({name: gains(run, setting) for name, run in runs.items()})
        results.append(line)
        print(json.dumps(line), file=sys.stderr)
    safe = [
        r for r in results if all(r[name].get("new", 0.0) >= -args.max_new_loss for name in runs)
    ]
    best = max(safe, key=lambda r: sum(r[n].get("repeated", 0.0) for n in runs) / len(runs))
    summary = {"rule": f"new-task Hit@1 loss <= {args.max_new_loss}", "best": best}
    if args.json:
        print(json.dumps({**summary, "grid": results}, indent=1))
        return
    print(f"best ({summary['rule']} on every set): {best}")


if __name__ == "__main__":
    main()
