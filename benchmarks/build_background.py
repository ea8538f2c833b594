"""Build the "rest of the world" background catalog that discover's abstention compares against.

    python benchmarks/train_sets.py                  # once: the BFCL training half laid out
    python benchmarks/build_background.py [--per-tool 5]

Two training sources, both licence-clean and neither an evaluation set:

- MetaTool (``$CARTOGRAPH_TRAIN_DIR/metatool``, MIT): 199 everyday products
  (mail, bookings, shopping, music…), one tool each;
- the BFCL training half (``$CARTOGRAPH_TRAIN_DIR/bfcl``, Apache-2.0, laid out
  as a federation by ``train_sets.py``): every function that is the one right
  answer of at least one training question, the specific operations of many
  domains (exchange rates, image rotation, mortgages, device control…).

For each tool it keeps the two texts the index would embed for a template card
of that tool (``IndexEntry.text`` and ``.name_text``: the same pipeline as our
own tools, so the two catalogs' cosines are comparable) and ``--per-tool`` of
its example questions, drawn with seed 0.

Texts are shipped so that any model can embed them; for the shipped MiniLM the
vectors are shipped too (``background/minilm.npz``, float16, pinned by sha256
in ``index/open_world.py``): embedding the ~3,400 texts one at a time takes
about 15 s of two cores, which would otherwise fall on the first task a
process sees.

Writes ``src/cartograph/index/background/world.json`` and ``minilm.npz`` and
prints the vectors' sha256 for ``BACKGROUND_VECTORS_SHA256``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import EvalQuery, load_queries
from cartograph.fsutil import atomic_write_bytes, atomic_write_text
from cartograph.index.embedders import get_embedder
from cartograph.index.entries import IndexEntry, entries_from_cards
from cartograph.index.open_world import (
    BACKGROUND_FILE,
    BACKGROUND_VECTORS_FILE,
    background_texts,
    split_vectors,
    texts_digest,
)

ROOT = Path(__file__).resolve().parents[1]
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))
BFCL_LAYOUT = ROOT / "benchmarks" / "results" / "train" / "bfcl"
OUT = ROOT / "src" / "cartograph" / "index" / "background"
SEED = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--per-tool", type=int, default=5)
    args = parser.parse_args()
    if not (BFCL_LAYOUT / "catalog.json").is_file():
        raise SystemExit("build_background: run benchmarks/train_sets.py first")
    rng = np.random.default_rng(SEED)
    metatool = _tools(TRAIN / "metatool", "", args.per_tool, rng)
    bfcl = _tools(BFCL_LAYOUT, "bfcl:", args.per_tool, rng)
    doc = {
        "provenance": (
            "MetaTool (Huang et al. 2023, github.com/HowieHwong/MetaTool, MIT licence): "
            "dataset/plugin_des.json and dataset/all_clean_data.csv, every tool. "
            "BFCL (Patil et al., github.com/ShishirPatil/gorilla, "
            "berkeley-function-call-leaderboard, Apache-2.0), the training half: every "
            "function that is the single right answer of a question ('bfcl:' names). "
            "Per tool: the index texts of its template card and "
            f"{args.per_tool} of its example questions (seed {SEED}); "
            "benchmarks/build_background.py"
        ),
        "licence": "MIT (MetaTool tools), Apache-2.0 (bfcl: tools)",
        "tools": metatool + bfcl,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT / BACKGROUND_FILE, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {BACKGROUND_FILE}: {len(metatool)} MetaTool + {len(bfcl)} BFCL tools")
    digest = _write_vectors(doc, OUT / BACKGROUND_VECTORS_FILE)
    print(f"wrote {BACKGROUND_VECTORS_FILE}: sha256 {digest}")


def _tools(
    data: Path, prefix: str, per_tool: int, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Each tool that is the single answer of some question, with ``per_tool`` of them."""
    cards = attest_with_unsafe_throwaway_key(load_catalog(data / "catalog.json"))
    entries = entries_from_cards({s: cards.ensure_intact(s) for s in cards})
    asked = _questions_by_tool(load_queries(data / "queries.jsonl"))
    return [
        _tool(e, prefix, sorted(set(asked[(e.server, e.tool)])), per_tool, rng)
        for e in entries
        if (e.server, e.tool) in asked
    ]


def _questions_by_tool(queries: Sequence[EvalQuery]) -> dict[tuple[str, str], list[str]]:
    asked: dict[tuple[str, str], list[str]] = {}
    for q in queries:
        if len(q.gold) == 1:
            asked.setdefault((q.gold[0].server, q.gold[0].tool), []).append(q.query)
    return asked


def _tool(
    entry: IndexEntry, prefix: str, pool: list[str], per_tool: int, rng: np.random.Generator
) -> dict[str, Any]:
    picked = [pool[i] for i in sorted(rng.permutation(len(pool))[:per_tool])]
    return {
        "name": prefix + entry.tool,
        "text": entry.text,
        "name_text": entry.name_text,
        "tasks": picked,
    }


def _write_vectors(doc: dict[str, Any], out: Path) -> str:
    """Embed the background with the shipped MiniLM, as serving would; return the file's sha256."""
    model = get_embedder("minilm")
    texts = background_texts(doc)
    tools, tasks = split_vectors(model.embed(texts.everything), len(texts.names))
    buffer = io.BytesIO()
    np.savez(
        buffer,
        model_id=np.array(model.model_id),
        texts_sha256=np.array(texts_digest(texts.everything)),
        tools=tools.astype(np.float16),
        tasks=tasks.astype(np.float16),
    )
    data = buffer.getvalue()
    atomic_write_bytes(out, data)
    return hashlib.sha256(data).hexdigest()


if __name__ == "__main__":
    main()
