"""A query-side lexical expansion learned from MetaTool, measured zero-shot (not shipped).

    python benchmarks/learn_query_expansion.py [--metatool-sample 2000] [--show WORD ...] [--json]

A classical IR translation model: the words people use in tasks are not the
words tool descriptions use ("remember" vs "knowledge graph"), so learn, from
(query, gold tool) pairs, which card words a query word predicts, and add the
strongest of them to the BM25 query with a small weight.

Association (:func:`learn`): over MetaTool's (query, tool) pairs, with query
words and tool words both from :func:`cartograph.index.text.tokenize` (the
index's tokeniser), a query word q predicts a card word w with
P(w | q) = share of the queries holding q whose gold tool's name + description
holds w, against the background P(w) = the share of tools whose text holds w.
Kept: w on at most ``MAX_DF`` of the tools (a word most descriptions use,
"provides", predicts nothing), q in at least
``MIN_QUERIES`` queries, w supported by at least ``MIN_TOOLS`` distinct gold
tools among q's queries (one plugin cannot teach a word), P(w | q) at least
``MIN_PROB`` and lift P(w | q) / P(w) at least ``MIN_LIFT``; the best
``PER_WORD`` by P(w | q) * log lift. Nothing is written by hand.

At query time each unit (task, step) gets the associated words of its tokens
that it does not already hold; their field-weighted BM25 (the hybrid's own
fields and weights), times ``weight``, is added to the unit's lexical score
before normalisation. The weight is chosen by 5-fold cross-validation over
MetaTool *tools* (associations learned from four fifths of the tools, scored on
queries of the held-out tools); LiveMCPBench (``$CARTOGRAPH_BENCH_DIR``) and the
demo single-step set are then scored zero-shot with associations from all of
MetaTool (``$CARTOGRAPH_TRAIN_DIR``). Results: docs/retrieval.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import EvalQuery, load_queries
from cartograph.eval.metrics import MRR_DEPTH, query_metrics
from cartograph.index.embedders import get_embedder
from cartograph.index.embedders.base import Embedder
from cartograph.index.rankers.hybrid import Features, HybridParams, combine, features, units_of
from cartograph.index.text import tokenize
from cartograph.index.tool_index import ToolIndex

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("CARTOGRAPH_BENCH_DIR", ROOT.parent / "shared" / "bench"))
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))
DEMO = ROOT / "benchmarks" / "data" / "demo"
P = HybridParams()
WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
FOLDS = 5

MIN_QUERIES = 10
MIN_TOOLS = 3
MIN_PROB = 0.1
MIN_LIFT = 4.0
PER_WORD = 3
MAX_DF = 0.1
IBM1_ITERATIONS = 5
IBM1_MIN_PROB = 0.05

Table = dict[str, list[tuple[str, float]]]


def tool_words(catalog: Path) -> dict[str, set[str]]:
    """Tool name -> the set of its name + description tokens."""
    data = json.loads(catalog.read_text(encoding="utf-8"))
    return {
        t["name"]: set(tokenize(f"{t['name']} {t.get('description') or ''}"))
        for s in data["servers"]
        for t in s["tools"]
    }


def learn(pairs: Sequence[tuple[str, str]], docs: dict[str, set[str]]) -> Table:
    """Query word -> its associated card words with their scores (see module docstring)."""
    n_q: Counter[str] = Counter()
    n_qw: dict[str, Counter[str]] = defaultdict(Counter)
    tools_qw: dict[tuple[str, str], set[str]] = defaultdict(set)
    used = {tool for _, tool in pairs}
    df: Counter[str] = Counter(w for t in used for w in docs[t])
    for query, tool in pairs:
        doc = docs[tool]
        for q in set(tokenize(query)):
            n_q[q] += 1
            n_qw[q].update(doc)
            for w in doc:
                tools_qw[(q, w)].add(tool)
    table: Table = {}
    for q, nq in n_q.items():
        if nq < MIN_QUERIES:
            continue
        scored = []
        for w, nqw in n_qw[q].items():
            if w == q or len(tools_qw[(q, w)]) < MIN_TOOLS or df[w] > MAX_DF * len(used):
                continue
            prob = nqw / nq
            lift = prob / (df[w] / len(used))
            if prob >= MIN_PROB and lift >= MIN_LIFT:
                scored.append((w, round(prob * math.log(lift), 4)))
        scored.sort(key=lambda x: (-x[1], x[0]))
        if scored:
            table[q] = scored[:PER_WORD]
    return table


def learn_ibm1(pairs: Sequence[tuple[str, str]], docs: dict[str, set[str]]) -> Table:
    """The same filters over IBM model 1 translation probabilities t(w | q) instead of P(w | q).

    EM with a NULL query word (``IBM1_ITERATIONS`` rounds from uniform): each
    card word of a gold tool is explained by the query words, so a word that
    every query of a tool shares with its card ("music" for "song") takes the
    mass and the card's other words do not get credited to every query word.
    """
    null = "\x00"
    data = [([*set(tokenize(q)), null], sorted(docs[t]), t) for q, t in pairs]
    t_wq: dict[tuple[str, str], float] = defaultdict(lambda: 1.0)
    for _ in range(IBM1_ITERATIONS):
        count: dict[tuple[str, str], float] = defaultdict(float)
        total: dict[str, float] = defaultdict(float)
        for query, doc, _tool in data:
            for w in doc:
                norm = sum(t_wq[(w, q)] for q in query)
                for q in query:
                    c = t_wq[(w, q)] / norm
                    count[(w, q)] += c
                    total[q] += c
        t_wq = defaultdict(float, {k: v / total[k[1]] for k, v in count.items()})
    n_q: Counter[str] = Counter(q for query, _, _ in data for q in query)
    tools_qw: dict[tuple[str, str], set[str]] = defaultdict(set)
    for query, doc, tool in data:
        for q in query:
            for w in doc:
                tools_qw[(q, w)].add(tool)
    used = {tool for _, tool in pairs}
    df: Counter[str] = Counter(w for t in used for w in docs[t])
    by_q: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (w, q), prob in t_wq.items():
        if q == null or w == q or n_q[q] < MIN_QUERIES or prob < IBM1_MIN_PROB:
            continue
        if len(tools_qw[(q, w)]) < MIN_TOOLS or df[w] > MAX_DF * len(used):
            continue
        by_q[q].append((w, round(prob, 4)))
    return {q: sorted(ws, key=lambda x: (-x[1], x[0]))[:PER_WORD] for q, ws in sorted(by_q.items())}


def expansion(tokens: Sequence[str], table: Table) -> list[str]:
    """The associated words of ``tokens`` that ``tokens`` does not already hold (each once)."""
    held = set(tokens)
    out: list[str] = []
    for t in tokens:
        for w, _ in table.get(t, ()):
            if w not in held and w not in out:
                out.append(w)
    return out


@dataclass
class Prepared:
    index: ToolIndex
    queries: list[EvalQuery]
    feats: list[Features]
    units: list[list[list[str]]]


def prepare(catalog: Path, queries: list[EvalQuery], model: Embedder) -> Prepared:
    index = ToolIndex.build(attest_with_unsafe_throwaway_key(load_catalog(catalog)), model)
    feats, units = [], []
    for q in queries:
        ctx = index.context(q.query)
        feats.append(features(ctx, params=P))
        units.append([list(u) for u in units_of(ctx)])
    return Prepared(index, queries, feats, units)


def expanded_lexical(d: Prepared, i: int, table: Table) -> np.ndarray:
    """Field-weighted BM25 of each unit's expansion words (units x tools)."""
    lex = d.index.corpus.lexical
    rows = []
    for unit in d.units[i]:
        extra = expansion(unit, table)
        row = np.zeros(d.index.size)
        for field in ("full", "purpose", "arguments", "name", "examples"):
            w = getattr(P, f"{field}_weight")
            if w and extra:
                row += w * getattr(lex, field).scores(extra)
        rows.append(row)
    return np.vstack(rows)


def score(
    d: Prepared, table: Table, weights: Sequence[float], only: Sequence[int] | None = None
) -> dict[float, dict[str, float]]:
    """Mean metrics per expansion weight over the queries at ``only`` (default all)."""
    keys = d.index.keys()
    positions = range(len(d.queries)) if only is None else only
    rows: dict[float, list[dict[str, float]]] = {w: [] for w in weights}
    for i in positions:
        f = d.feats[i]
        extra = expanded_lexical(d, i, table)
        judgement = d.queries[i].judgement()
        for w in weights:
            g = replace(f, full=(f.full if f.full is not None else 0.0) + w * extra)
            ranked = combine(g, P, MRR_DEPTH, 5)
            rows[w].append(query_metrics([keys[j] for j, _ in ranked], judgement))
    return {
        w: {m: float(np.mean([r[m] for r in rs])) for m in ("R@5", "Hit@1", "Hit@5", "MRR")}
        for w, rs in rows.items()
    }


def objective(m: dict[str, float]) -> float:
    return m["R@5"] + m["Hit@1"] + m["Hit@5"] + m["MRR"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metatool-sample", type=int, default=2000)
    parser.add_argument("--show", nargs="*", default=[])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--model", choices=("pmi", "ibm1"), default="pmi")
    args = parser.parse_args()
    fit = learn_ibm1 if args.model == "ibm1" else learn
    meta_catalog = TRAIN / "metatool" / "catalog.json"
    docs = tool_words(meta_catalog)
    meta = load_queries(TRAIN / "metatool" / "queries.jsonl")
    pairs = [(q.query, q.gold[0].tool) for q in meta]
    full_table = fit(pairs, docs)
    print(f"associations: {len(full_table)} query words", file=sys.stderr)
    for word in args.show:
        for t in tokenize(word):
            print(f"{t}: {full_table.get(t)}", file=sys.stderr)
    if args.show:
        return

    model = get_embedder("minilm")
    tools = sorted(docs)
    random.Random(0).shuffle(tools)
    fold_of = {t: i % FOLDS for i, t in enumerate(tools)}
    sample = list(meta)
    random.Random(0).shuffle(sample)
    sample = sample[: args.metatool_sample]
    prepared_meta = prepare(meta_catalog, sample, model)
    print("metatool: prepared", file=sys.stderr)
    cv: dict[float, list[dict[str, float]]] = {w: [] for w in WEIGHTS}
    for fold in range(FOLDS):
        train = [(q, t) for q, t in pairs if fold_of[t] != fold]
        table = fit(train, docs)
        held = [i for i, q in enumerate(sample) if fold_of[q.gold[0].tool] == fold]
        for w, m in score(prepared_meta, table, WEIGHTS, held).items():
            cv[w].append(m | {"n": float(len(held))})
    pooled = {
        w: {
            m: sum(f[m] * f["n"] for f in folds) / sum(f["n"] for f in folds)
            for m in ("R@5", "Hit@1", "Hit@5", "MRR")
        }
        for w, folds in cv.items()
    }
    chosen = {fold: max(WEIGHTS, key=lambda w: objective(cv[w][fold])) for fold in range(FOLDS)}
    best = max(WEIGHTS, key=lambda w: objective(pooled[w]))
    out: dict[str, object] = {
        "metatool_heldout_tools": pooled,
        "fold_choices": chosen,
        "chosen_weight": best,
    }
    print(f"metatool CV: {json.dumps(out, default=str)}", file=sys.stderr)
    sets = {
        "livemcpbench": (
            BENCH / "livemcpbench" / "catalog.json",
            load_queries(BENCH / "livemcpbench" / "queries.jsonl"),
        ),
        "demo-single-step": (DEMO / "catalog.json", load_queries(DEMO / "single_step.jsonl")),
    }
    for name, (catalog, queries) in sets.items():
        d = prepare(catalog, queries, model)
        out[name] = score(d, full_table, WEIGHTS)
        fired = [bool(expanded_lexical(d, i, full_table).any()) for i in range(len(d.queries))]
        out[f"{name}: share of tasks whose expansion meets the catalog"] = float(np.mean(fired))
        print(f"{name}: {json.dumps(out[name])}", file=sys.stderr)
        print(f"{name}: done", file=sys.stderr)
    if args.json:
        json.dump(out, sys.stdout, indent=2, default=str)
        print()
        return
    print(f"weight chosen by CV over MetaTool tools: {best} (per fold: {chosen})")
    for key in ("metatool_heldout_tools", "livemcpbench", "demo-single-step"):
        table_ = out[key]
        assert isinstance(table_, dict)
        for w, m in table_.items():
            cells = " / ".join(f"{m[k]:.3f}" for k in ("R@5", "Hit@1", "Hit@5", "MRR"))
            mark = " (chosen)" if w == best else ""
            print(f"{key} weight {w}{mark}: R@5 / Hit@1 / Hit@5 / MRR {cells}")


if __name__ == "__main__":
    main()
