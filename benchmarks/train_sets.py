"""Training sets in the bench format, for fitting what ships (never the evaluation sets).

    python benchmarks/train_sets.py [--out DIR]    # default: benchmarks/results/train

Writes ``DIR/bfcl/{catalog.json,queries.jsonl,irrelevance.jsonl}`` from the BFCL
training half (``../shared/train/bfcl``, Apache-2.0; keep its attribution): each
distinct candidate set becomes one server (``bfcl-<hash>``, as the evaluation
half is laid out), every question with gold functions a query over that
federation, and every irrelevance question (``gold: []``) an out-of-catalog
task. The federation then has the evaluation half's shape — many apps, each
with sibling functions — so rankers and thresholds can be fitted and
cross-validated on it with ``tune_hybrid.py --set`` and ``cartograph eval``.
MetaTool (``../shared/train/metatool``) is already in the bench format.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))


def metatool_held_out(tool: str) -> bool:
    """MetaTool's tools that nothing is fitted on: one fifth, by a stable hash of the name.

    ``scripts/finetune_minilm.py`` leaves their queries out of training and
    ``benchmarks/generalisation.py`` scores them (``metatool-heldout``), so
    MetaTool is a held-out set for whatever is fitted on the rest of it.
    """
    return hashlib.sha256(tool.encode("utf-8")).digest()[0] % 5 == 0


def metatool_ooc(tool: str) -> bool:
    """Another fifth of MetaTool's tools, taken out of its catalog to fit abstention on."""
    return hashlib.sha256(tool.encode("utf-8")).digest()[0] % 5 == 1


def server_name(candidates: list[dict[str, Any]]) -> str:
    names = sorted(json.dumps(c, sort_keys=True) for c in candidates)
    return "bfcl-" + hashlib.sha256("\n".join(names).encode()).hexdigest()[:8]


def convert(source: Path, out: Path) -> dict[str, int]:
    """Each function name once, on the server of the first set that has it.

    Many questions share a function (``get_current_weather`` in hundreds of
    sets, its description worded a little differently in each); kept once per
    set, the near-copies would tie and gold would be a coin toss between them.
    Gold names map to wherever that name lives.
    """
    home: dict[str, tuple[str, str]] = {}
    servers: dict[str, list[dict[str, Any]]] = {}
    queries: list[dict[str, Any]] = []
    irrelevant: list[dict[str, Any]] = []
    for line in source.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        server = server_name(row["candidates"])
        where: dict[str, tuple[str, str]] = {}
        for candidate in row["candidates"]:
            key = candidate["name"]
            if key not in home:
                servers.setdefault(server, []).append(candidate)
                home[key] = (server, key)
            where.setdefault(key, home[key])
        gold = row["gold"]
        if gold is None:  # some candidate fits, not annotated which
            continue
        if not gold:
            irrelevant.append({"id": row["id"], "query": row["query"], "gold": []})
            continue
        tools = [dict(zip(("server", "tool"), where[n], strict=True)) for n in dict.fromkeys(gold)]
        queries.append(
            {
                "id": row["id"],
                "query": row["query"],
                "gold": tools,
                "gold_groups": [[t] for t in tools],
                "category": row["category"],
            }
        )
    catalog = {
        "servers": [
            {"name": name, "description": "", "tools": tools}
            for name, tools in sorted(servers.items())
        ]
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "catalog.json").write_text(json.dumps(catalog), encoding="utf-8")
    for name, rows in (("queries.jsonl", queries), ("irrelevance.jsonl", irrelevant)):
        (out / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tools = sum(len(s["tools"]) for s in catalog["servers"])
    return {
        "servers": len(servers),
        "tools": tools,
        "queries": len(queries),
        "ooc": len(irrelevant),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "train")
    args = parser.parse_args()
    counts = convert(TRAIN / "bfcl" / "queries.jsonl", args.out / "bfcl")
    print(json.dumps({"bfcl": counts, "out": str(args.out)}))


if __name__ == "__main__":
    main()
