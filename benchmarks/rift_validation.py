"""Rift's risk levels against observed confusion (docs/rift.md, "Validation").

For each eval set (a catalog snapshot and its queries): template cards are
attested in memory, Rift runs with the shipped defaults and with ``--paper``,
the served index (default ranker) ranks every tool for every query, and
:mod:`cartograph.rift.validate` counts confusions — a query whose gold tool is
a cluster member while another, non-gold member ranks above it.

    .venv/bin/python benchmarks/rift_validation.py \\
        --set livemcpbench=../shared/bench/livemcpbench \\
        --set metatool=../shared/train/metatool:15 [--json] [--unconfirmed FILE]

A set folder holds ``catalog.json`` and ``queries.jsonl`` (or ``single_step.jsonl``,
as ``benchmarks/data/demo`` does); ``:N`` after it
samples at most N queries per gold tool (MetaTool has ~100 per tool).
``--unconfirmed FILE`` writes every HIGH cluster without an observed
confusion with its probe confusion (the member whose own probe ranks a rival
at or above it), for a person to judge.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from cartograph.cards.attest import attest_in_memory
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import EvalQuery, load_queries
from cartograph.index.cache import EmbeddingCache
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex
from cartograph.rift.analysis import analyse, make_embed_fn, tools_from_cards
from cartograph.rift.model import RiftReport, RiftSettings
from cartograph.rift.validate import LabelledQuery, Validation, confusions_in, validate


def _sample(queries: list[EvalQuery], per_tool: int) -> list[EvalQuery]:
    if per_tool <= 0:
        return queries
    by_tool: dict[str, list[EvalQuery]] = {}
    for q in queries:
        by_tool.setdefault(f"{q.gold[0].server}/{q.gold[0].tool}", []).append(q)
    rng = random.Random(0)
    return [x for qs in by_tool.values() for x in rng.sample(qs, min(per_tool, len(qs)))]


def _labelled(index: ToolIndex, queries: list[EvalQuery]) -> list[LabelledQuery]:
    keys = [f"{server}/{tool}" for server, tool in index.keys()]  # noqa: SIM118 (a method)
    out: list[LabelledQuery] = []
    for q in queries:
        ranking = [keys[i] for i, _ in index.rank(q.query, 5, depth=index.size)]
        gold = frozenset(f"{g.server}/{g.tool}" for g in q.gold)
        out.append(LabelledQuery(id=q.id, gold=gold, ranking=ranking))
    return out


def _row(name: str, mode: str, report: RiftReport, v: Validation) -> dict[str, Any]:
    in_high = sum(c.size for c in report.by_risk("HIGH"))
    return {
        "set": name,
        "settings": mode,
        "tools": report.tools,
        "clusters": v.clusters,
        "HIGH": v.high,
        "MEDIUM": v.medium,
        "tools in HIGH": in_high,
        "HIGH covered": v.high_covered,
        "HIGH confused": v.high_confused,
        "precision (all HIGH)": v.precision,
        "precision (covered HIGH)": v.precision_covered,
        "confusions": v.confusions,
        "flagged H+M": v.flagged,
        "recall H+M": v.recall,
    }


def _unconfirmed(
    name: str, report: RiftReport, queries: list[LabelledQuery]
) -> list[dict[str, Any]]:
    confused = {f.cluster for f in confusions_in(report.clusters, queries)}
    out: list[dict[str, Any]] = []
    for c in report.by_risk("HIGH"):
        if c.id in confused:
            continue
        worst = min(c.members, key=lambda m: m.margin if m.margin is not None else 1.0)
        out.append(
            {
                "set": name,
                "members": [m.key for m in c.members],
                "probe_of": worst.key,
                "probe": worst.query,
                "ranks_above_or_ties": worst.nearest,
                "margin": worst.margin,
            }
        )
    return out


def _judged_real(
    report: RiftReport, queries: list[LabelledQuery], judged: set[frozenset[str]]
) -> int:
    """HIGH clusters with an observed confusion, or judged real in ``judged``."""
    confused = {f.cluster for f in confusions_in(report.clusters, queries)}
    return sum(c.id in confused or c.keys in judged for c in report.by_risk("HIGH"))


def run_set(
    name: str, folder: Path, per_tool: int, cache_dir: Path, judged: set[frozenset[str]]
) -> dict[str, Any]:
    catalog = load_catalog(folder / "catalog.json")
    cards = attest_in_memory(catalog)
    model = get_embedder("minilm")
    cache = EmbeddingCache(cache_dir)
    index = ToolIndex.build(cards, model, cache=cache)
    found = folder / "queries.jsonl"
    path = found if found.is_file() else folder / "single_step.jsonl"
    queries = _labelled(index, _sample(load_queries(path), per_tool))
    embed = make_embed_fn(model, cache=cache)
    rows: list[dict[str, Any]] = []
    unconfirmed: list[dict[str, Any]] = []
    for mode, settings in (("default", RiftSettings()), ("--paper", RiftSettings.paper())):
        report = analyse(
            tools_from_cards(cards, probe=settings.probe), embed, settings, model_id=""
        )
        row = _row(name, mode, report, validate(report, queries))
        if mode == "default" and judged:
            real = _judged_real(report, queries, judged)
            row["precision (observed or judged real)"] = real / row["HIGH"] if row["HIGH"] else None
        rows.append(row)
        if mode == "default":
            unconfirmed = _unconfirmed(name, report, queries)
    return {"rows": rows, "queries": len(queries), "unconfirmed": unconfirmed}


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return "—" if value is None else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", required=True, help="NAME=FOLDER[:N]")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--unconfirmed", type=Path)
    parser.add_argument("--judgements", type=Path, help="benchmarks/data/rift/judgements.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "rift-val")
    args = parser.parse_args(argv)
    judged: set[frozenset[str]] = set()
    if args.judgements is not None:
        items = json.loads(args.judgements.read_text(encoding="utf-8"))
        judged = {frozenset(i["members"]) for i in items if i["real"]}
    results = []
    for spec in args.set:
        name, _, rest = spec.partition("=")
        folder, _, per_tool = rest.partition(":")
        results.append(run_set(name, Path(folder), int(per_tool or 0), args.cache, judged))
        print(f"{name}: {results[-1]['queries']} queries", file=sys.stderr)
    rows = [r for res in results for r in res["rows"]]
    if args.unconfirmed is not None:
        items = [u for res in results for u in res["unconfirmed"]]
        args.unconfirmed.write_text(json.dumps(items, indent=1, ensure_ascii=False) + "\n")
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    columns = list(dict.fromkeys(c for r in rows for c in r))
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for r in rows:
        print("| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
