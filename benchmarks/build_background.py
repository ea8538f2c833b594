"""Build the "rest of the world" background catalog that discover's abstention compares against.

    python benchmarks/build_background.py [--per-tool 5]

Data: ``$CARTOGRAPH_TRAIN_DIR/metatool`` (MIT licence; 199 everyday tools, 20,556
example queries). For each tool it keeps the two texts the index would embed for a
template card of that tool (``IndexEntry.text`` and ``.name_text``: the same
pipeline as our own tools, so the two catalogs' cosines are comparable) and
``--per-tool`` of its example queries, drawn with seed 0. Texts, not vectors, are
shipped: they are embedded with whatever model serves (cached by model id), so the
file does not tie abstention to one embedder.

Writes ``src/cartograph/index/background/metatool.json`` with its provenance.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import load_queries
from cartograph.fsutil import atomic_write_text
from cartograph.index.entries import entries_from_cards

ROOT = Path(__file__).resolve().parents[1]
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))
OUT = ROOT / "src" / "cartograph" / "index" / "background" / "metatool.json"
SEED = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-tool", type=int, default=5)
    args = parser.parse_args()
    data = TRAIN / "metatool"
    cards = attest_with_unsafe_throwaway_key(load_catalog(data / "catalog.json"))
    entries = entries_from_cards({s: cards.ensure_intact(s) for s in cards})
    queries: dict[str, list[str]] = {}
    for q in load_queries(data / "queries.jsonl"):
        for gold in q.gold:
            queries.setdefault(gold.tool, []).append(q.query)
    rng = np.random.default_rng(SEED)
    tools = []
    for e in entries:
        pool = sorted(set(queries.get(e.tool, [])))
        picked = [pool[i] for i in sorted(rng.permutation(len(pool))[: args.per_tool])]
        tools.append({"name": e.tool, "text": e.text, "name_text": e.name_text, "tasks": picked})
    doc = {
        "provenance": (
            "MetaTool (Huang et al. 2023, github.com/HowieHwong/MetaTool, MIT licence): "
            "dataset/plugin_des.json and dataset/all_clean_data.csv. Per tool: the index "
            "texts of its template card and "
            f"{args.per_tool} of its example queries (seed {SEED}); "
            "benchmarks/build_background.py"
        ),
        "licence": "MIT",
        "tools": tools,
    }
    atomic_write_text(OUT, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(tools)} tools")


if __name__ == "__main__":
    main()
