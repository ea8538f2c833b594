"""How far the embedder's numbers move across onnxruntime builds, beside the demo checks' margins.

    python benchmarks/embedder_spread.py --python A=/venv-a/bin/python --python B=... [--json]

The demo's checks (``cartograph.demo.steps.AGENT_TASKS``) require a right tool among
the first ``CHECKED_TOP`` the agent reads. Such a check is sound only where its
margin — the best right tool's score minus the score of the first tool past
``CHECKED_TOP`` — is wider than the spread of the scores across the runtimes users
have. Each ``--python`` is an interpreter with Cartograph and one onnxruntime build
installed (e.g. ``uv venv V && uv pip install -e . onnxruntime==1.20.1``); each runs
a worker that ranks the demo snapshot for the four tasks and embeds the demo's
single-step tasks. The report gives, per pair of runtimes, the largest score
difference of any tool in any task's top 10 and the smallest cosine between the two
runtimes' vectors of the same text, and, per runtime, each check's margin.

Instruction sets: onnxruntime picks its int8 kernels by CPU feature at run time
(AVX2, AVX-512 VNNI, ARM dot-product), so this measures the builds on this machine's
CPU only; run it on each kind of machine to compare those.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "benchmarks" / "data" / "demo"
TOP = 10


def worker() -> None:
    """In one runtime: top-10 scores per demo check task, and vectors of the single-step tasks."""
    import onnxruntime

    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.demo.steps import AGENT_TASKS, CHECKED_TOP
    from cartograph.eval.data import load_queries
    from cartograph.index.discover import discover
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    embedder = get_embedder("minilm")
    cards = attest_with_unsafe_throwaway_key(load_catalog(DEMO / "catalog.json"))
    index = ToolIndex.build(cards, embedder)
    checks = []
    for task in AGENT_TASKS:
        found = discover(index, cards, task.task, k=TOP)
        ranked = [(f"{t.server}/{t.tool}", t.score) for t in found.tools]
        right = [s for (key, s) in ranked if tuple(key.split("/", 1)) in task.first]
        past = ranked[CHECKED_TOP][1] if len(ranked) > CHECKED_TOP else 0.0
        margin = (max(right) - past) if right else None
        checks.append({"task": task.task, "ranked": ranked, "margin": margin})
    texts = [q.query for q in load_queries(DEMO / "single_step.jsonl")]
    vectors = embedder.embed(texts).tolist()
    json.dump(
        {"onnxruntime": onnxruntime.__version__, "checks": checks, "vectors": vectors},
        sys.stdout,
    )


def run(python: str) -> dict[str, Any]:
    done = subprocess.run(
        [python, __file__, "--worker"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"embedder_spread: {python} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """Largest score difference of a tool in both top-10s, smallest cosine between vectors."""
    score_diff = 0.0
    for ca, cb in zip(a["checks"], b["checks"], strict=True):
        scores = dict(cb["ranked"])
        for key, score in ca["ranked"]:
            if key in scores:
                score_diff = max(score_diff, abs(score - scores[key]))
    cosines = [
        sum(x * y for x, y in zip(va, vb, strict=True))
        for va, vb in zip(a["vectors"], b["vectors"], strict=True)
    ]
    return {"max_score_diff": round(score_diff, 5), "min_cosine": round(min(cosines), 6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--python", action="append", default=[], help="NAME=INTERPRETER")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    runtimes = dict(p.split("=", 1) for p in args.python) or {"this": sys.executable}
    results = {name: run(python) for name, python in runtimes.items()}
    pairs = {
        f"{x} vs {y}": compare(results[x], results[y])
        for x, y in itertools.combinations(results, 2)
    }
    margins = {name: {c["task"]: c["margin"] for c in r["checks"]} for name, r in results.items()}
    versions = {name: r["onnxruntime"] for name, r in results.items()}
    report = {"onnxruntime": versions, "pairs": pairs, "check_margins": margins}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, version in versions.items():
        print(f"{name}: onnxruntime {version}")
    for pair, stats in pairs.items():
        print(
            f"{pair}: max score difference {stats['max_score_diff']:.5f}, "
            f"min cosine {stats['min_cosine']:.6f}"
        )
    for name, by_task in margins.items():
        for task, margin in by_task.items():
            shown = "no right tool in the top 10" if margin is None else f"{margin:+.4f}"
            print(f"{name}: margin {shown}  {task}")


if __name__ == "__main__":
    main()
