"""Rift's risk levels against observed confusion (docs/rift.md, "Validation").

For each eval set (a catalog snapshot and its queries): template cards are
attested in memory, Rift runs with the shipped defaults and with ``--paper``,
the served index (default ranker) ranks every tool for every query, and
:mod:`cartograph.rift.validate` counts confusions — a query whose gold tool is
a cluster member while another, non-gold member ranks above it.

    .venv/bin/python benchmarks/rift_validation.py \\
        --set livemcpbench=../shared/bench/livemcpbench \\
        --set metatool=../shared/train/metatool:15 [--json] [--unconfirmed FILE]

``--hostile DIR`` adds a set built from a hostile-publisher corpus (one JSON
per attack: a ``server`` placed beside ``benchmarks/data/demo/catalog.json``
and the tasks of the tools it ``imitates``, gold = the imitated tool).

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

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
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


def _confirmed(report: RiftReport, queries: list[LabelledQuery]) -> set[frozenset[str]]:
    """Member sets of HIGH clusters with an observed confusion in this set."""
    confused = {f.cluster for f in confusions_in(report.clusters, queries)}
    return {c.keys for c in report.by_risk("HIGH") if c.id in confused}


def hostile_set(corpus: Path, base: Path, out: Path) -> Path:
    """Write the hostile corpus as a set folder (catalog + queries) under ``out``."""
    catalog = json.loads(base.read_text(encoding="utf-8"))
    lines: list[str] = []
    for attack in sorted(corpus.glob("*.json")):
        body = json.loads(attack.read_text(encoding="utf-8"))
        catalog["servers"].append(body["server"])
        for target in body["imitates"]:
            gold = [{"server": target["server"], "tool": target["tool"]}]
            for k, task in enumerate(target["tasks"]):
                qid = f"{attack.stem}-{target['tool']}-{k}"
                lines.append(json.dumps({"id": qid, "query": task, "gold": gold}))
    out.mkdir(parents=True, exist_ok=True)
    (out / "catalog.json").write_text(json.dumps(catalog), encoding="utf-8")
    (out / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def run_set(name: str, folder: Path, per_tool: int, cache_dir: Path) -> dict[str, Any]:
    catalog = load_catalog(folder / "catalog.json")
    cards = attest_with_unsafe_throwaway_key(catalog)
    model = get_embedder("minilm")
    cache = EmbeddingCache(cache_dir)
    index = ToolIndex.build(cards, model, cache=cache)
    found = folder / "queries.jsonl"
    path = found if found.is_file() else folder / "single_step.jsonl"
    queries = _labelled(index, _sample(load_queries(path), per_tool))
    embed = make_embed_fn(model, cache=cache)
    rows: list[dict[str, Any]] = []
    unconfirmed: list[dict[str, Any]] = []
    high: list[frozenset[str]] = []
    confirmed: set[frozenset[str]] = set()
    for mode, settings in (("default", RiftSettings()), ("--paper", RiftSettings.paper())):
        report = analyse(
            tools_from_cards(cards, probe=settings.probe), embed, settings, model_id=""
        )
        row = _row(name, mode, report, validate(report, queries))
        rows.append(row)
        if mode == "default":
            unconfirmed = _unconfirmed(name, report, queries)
            high = [c.keys for c in report.by_risk("HIGH")]
            confirmed = _confirmed(report, queries)
    grid = {}
    for h in HIGH_GRID:
        settings = RiftSettings(high=h, medium=max(h, RiftSettings().medium))
        report = analyse(tools_from_cards(cards), embed, settings, model_id="")
        grid[h] = validate(report, queries)
    return {
        "name": name,
        "rows": rows,
        "queries": len(queries),
        "unconfirmed": unconfirmed,
        "high": high,
        "confirmed": confirmed,
        "grid": grid,
    }


HIGH_GRID = (-0.05, -0.02, 0.0, 0.01, 0.02, 0.05, 0.10)
MIN_RECALL = 0.8


def _pooled(vs: list[Validation]) -> tuple[float, float]:
    covered = sum(v.high_covered for v in vs)
    confusions = sum(v.confusions for v in vs)
    precision = sum(v.high_confused for v in vs) / covered if covered else 0.0
    recall = sum(v.flagged for v in vs) / confusions if confusions else 1.0
    return precision, recall


def cross_validate(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leave one set out: pick ``high`` on the others (best covered-HIGH precision with
    H+M recall ≥ 0.8, ties to the larger threshold), report it on the held-out set."""
    rows: list[dict[str, Any]] = []
    for held in results:
        others = [r for r in results if r is not held]
        scored = [(h, *_pooled([r["grid"][h] for r in others])) for h in HIGH_GRID]
        allowed = [x for x in scored if x[2] >= MIN_RECALL] or scored
        best = max(allowed, key=lambda x: (round(x[1], 6), x[0]))[0]
        v = held["grid"][best]
        rows.append(
            {
                "held out": held["name"],
                "high chosen on the others": best,
                "HIGH": v.high,
                "precision (covered HIGH)": v.precision_covered,
                "recall H+M": v.recall,
            }
        )
    return rows


def _add_precision(results: list[dict[str, Any]], judged: set[frozenset[str]]) -> None:
    """HIGH precision counting a cluster real when any set observed its confusion or a
    person judged its probe confusion real (benchmarks/data/rift/judgements.json)."""
    observed = set().union(*(r["confirmed"] for r in results))
    for r in results:
        real = sum(keys in observed or keys in judged for keys in r["high"])
        row = r["rows"][0]
        row["HIGH real (observed anywhere or judged)"] = real
        row["precision (observed or judged real)"] = real / len(r["high"]) if r["high"] else None


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return "—" if value is None else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], help="NAME=FOLDER[:N]")
    parser.add_argument("--hostile", type=Path, help="a hostile-publisher corpus folder")
    parser.add_argument("--base", type=Path, default=Path("benchmarks/data/demo/catalog.json"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--unconfirmed", type=Path)
    parser.add_argument("--cv", action="store_true", help="leave-one-set-out choice of HIGH")
    parser.add_argument("--judgements", type=Path, help="benchmarks/data/rift/judgements.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "rift-val")
    args = parser.parse_args(argv)
    judged: set[frozenset[str]] = set()
    if args.judgements is not None:
        items = json.loads(args.judgements.read_text(encoding="utf-8"))
        judged = {frozenset(i["members"]) for i in items if i["real"]}
    sets = list(args.set)
    if args.hostile is not None:
        folder = hostile_set(args.hostile, args.base, args.cache / "hostile-set")
        sets.append(f"hostile={folder}")
    results = []
    for spec in sets:
        name, _, rest = spec.partition("=")
        folder, _, per_tool = rest.partition(":")
        results.append(run_set(name, Path(folder), int(per_tool or 0), args.cache))
        print(f"{name}: {results[-1]['queries']} queries", file=sys.stderr)
    _add_precision(results, judged)
    rows = [r for res in results for r in res["rows"]]
    if args.unconfirmed is not None:
        items = [u for res in results for u in res["unconfirmed"]]
        args.unconfirmed.write_text(json.dumps(items, indent=1, ensure_ascii=False) + "\n")
    tables = [rows] + ([cross_validate(results)] if args.cv else [])
    if args.json:
        print(json.dumps(tables, indent=1))
        return 0
    for table in tables:
        columns = list(dict.fromkeys(c for r in table for c in r))
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
        for r in table:
            print("| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
