"""General variants of the hybrid's scoring, measured side by side (none shipped).

    python benchmarks/fusion_variants.py [--metatool-sample 2000] [--json]

Each variant changes one thing of the shipped hybrid (``HybridParams()``):
how the two signals are normalised and fused, what the dense side compares
(description sentences, sibling contrast, the name view's weight, a task
with its names and numbers masked), a server-local BM25, or a dense share
that follows the lexical side's margin. Scored on LiveMCPBench
(``$CARTOGRAPH_BENCH_DIR``), the demo single-step set and a seeded sample of
MetaTool (``$CARTOGRAPH_TRAIN_DIR``, licence-clean). One setting per variant,
chosen before this run; nothing refers to any query text. Results and the
reading of them: docs/retrieval.md, "Failure anatomy by signal".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.snapshot import load_catalog
from cartograph.eval.data import EvalQuery, load_queries
from cartograph.eval.metrics import MRR_DEPTH, query_metrics
from cartograph.index.embedders import get_embedder
from cartograph.index.embedders.base import Embedder
from cartograph.index.entries import IndexEntry, entries_from_cards, plain_description
from cartograph.index.lexical import FieldIndex
from cartograph.index.rankers.base import unit_max, unit_range
from cartograph.index.rankers.hybrid import Features, HybridParams, features, lexical_scores
from cartograph.index.text import tokenize
from cartograph.index.tool_index import ToolIndex

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("CARTOGRAPH_BENCH_DIR", ROOT.parent / "shared" / "bench"))
TRAIN = Path(os.environ.get("CARTOGRAPH_TRAIN_DIR", ROOT.parent / "shared" / "train"))
DEMO = ROOT / "benchmarks" / "data" / "demo"
P = HybridParams()
Scores = np.ndarray
_NAMES_AND_NUMBERS = re.compile(r"(?<=[a-z,;:] )[A-Z][\w'’.-]*|\b\d[\d:.,%/-]*\b")


@dataclass
class Prepared:
    """One query set: its index, per-query features and what the variants need beyond them."""

    index: ToolIndex
    queries: list[EvalQuery]
    feats: list[Features]
    unit_vectors: list[np.ndarray]  # per query: task + steps, as the hybrid embeds them
    masked_vectors: list[np.ndarray]
    local_lexical: list[Scores]  # per query: server-local BM25, aggregated over units
    text_vectors: np.ndarray
    name_vectors: np.ndarray
    sentence_vectors: np.ndarray
    sentence_tool: np.ndarray


def prepare(catalog: Path, queries: list[EvalQuery], model: Embedder) -> Prepared:
    cards = attest_with_unsafe_throwaway_key(load_catalog(catalog))
    index = ToolIndex.build(cards, model)
    # The corpus is columnar (no per-tool objects): the entries it was built from
    # are rebuilt from the same cards and put in the corpus's position order.
    by_key = {e.key: e for e in entries_from_cards(cards)}
    entries = [by_key[key] for key in index.corpus.keys]
    sentences = [
        (i, s.strip().rstrip("."))
        for i, e in enumerate(entries)
        for s in re.split(r"(?<=\.)\s+", plain_description(e.description, e.name))
        if len(s.split()) >= 3
    ]
    feats, units, masked, local = [], [], [], []
    servers = _server_bm25(index, entries)
    for q in queries:
        ctx = index.context(q.query)
        feats.append(features(ctx))
        texts = [ctx.query.text] + (
            [c.text for c in ctx.query.clauses] if len(ctx.query.clauses) >= 2 else []
        )
        units.append(model.embed(texts))
        masked.append(model.embed([_mask(t) for t in texts]))
        tokens = [ctx.query.tokens] + (
            [c.tokens for c in ctx.query.clauses] if len(ctx.query.clauses) >= 2 else []
        )
        local.append(_aggregate(_local_scores(servers, tokens, index.size)))
    return Prepared(
        index,
        queries,
        feats,
        units,
        masked,
        local,
        model.embed([e.text for e in entries]),
        model.embed([e.name_text for e in entries]),
        model.embed([s for _, s in sentences]) if sentences else np.zeros((0, model.dim)),
        np.array([i for i, _ in sentences], dtype=np.int64),
    )


def _mask(text: str) -> str:
    masked = re.sub(r"\s+", " ", _NAMES_AND_NUMBERS.sub(" ", text)).strip()
    return masked if len(masked.split()) >= 2 else text


def _server_bm25(index: ToolIndex, entries: list[IndexEntry]) -> list[tuple[list[int], FieldIndex]]:
    groups: dict[int, list[int]] = {}
    for i, s in enumerate(index.corpus.tool_server):
        groups.setdefault(int(s), []).append(i)
    return [
        (ids, FieldIndex(tokens=[_tool_tokens(entries[i]) for i in ids]))
        for ids in groups.values()
        if len(ids) > 1
    ]


def _tool_tokens(entry: object) -> list[str]:
    return [t for f in ("name", "description", "examples") for t in tokenize(getattr(entry, f))]


def _local_scores(
    servers: list[tuple[list[int], FieldIndex]], units: list[list[str]], size: int
) -> np.ndarray:
    out = np.zeros((len(units), size))
    for ids, field in servers:
        for u, tokens in enumerate(units):
            out[u, ids] = unit_max(field.scores(tokens))
    return out


def _aggregate(units: np.ndarray, step_weight: float = P.step_weight) -> Scores:
    rest = units[1:]
    return units[0] + (step_weight * rest.max(axis=0) if len(rest) else 0.0)


def _zscore(row: Scores) -> Scores:
    sd = row.std()
    return (row - row.mean()) / sd if sd > 0 else np.zeros_like(row)


def _rr(row: Scores, k: float) -> Scores:
    order = np.argsort(-row, kind="stable")
    ranks = np.empty(len(row))
    ranks[order] = np.arange(len(row))
    return (k + 1) / (k + ranks + 1)


def fused(
    f: Features,
    p: HybridParams = P,
    *,
    lexical_norm: Callable[[Scores], Scores] = unit_max,
    dense_norm: Callable[[Scores], Scores] = unit_range,
    dense_share: Callable[[int], float] | None = None,
) -> Scores:
    """The hybrid's score with the normalisations (and a per-unit dense share) swappable."""
    assert f.dense is not None and f.server_dense is not None
    lexical = lexical_scores(f, p)
    rows = []
    for u in range(lexical.shape[0]):
        share = dense_share(u) if dense_share else p.dense_weight
        server = (1 - p.server_dense_share) * lexical_norm(f.server_lexical[u])
        server = server + p.server_dense_share * dense_norm(f.server_dense[u])
        rows.append(
            (1 - share) * lexical_norm(lexical[u])
            + share * dense_norm(f.dense[u])
            + p.server_weight * server[f.tool_server]
        )
    return _aggregate(np.array(rows), p.step_weight)


def _with_dense(f: Features, dense: np.ndarray) -> Features:
    return replace(f, dense=dense)


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def variants(d: Prepared) -> dict[str, Callable[[int], Scores]]:
    """Name -> per-query scorer (query position -> a score per tool)."""
    srv = d.index.corpus.tool_server
    tools = _unit(d.text_vectors + d.name_vectors)
    counts = np.bincount(srv)
    centroids = np.zeros((counts.size, tools.shape[1]))
    np.add.at(centroids, srv, tools)
    centroids /= np.maximum(counts, 1)[:, None]
    contrast = _unit(tools - 0.3 * centroids[srv] * (counts[srv][:, None] > 1))
    half_name = _unit(d.text_vectors + 0.5 * d.name_vectors)

    def sentences(i: int) -> np.ndarray:
        base = d.feats[i].dense
        assert base is not None
        best = np.full(base.shape, -np.inf)
        sims = d.unit_vectors[i] @ d.sentence_vectors.T
        np.maximum.at(best.T, d.sentence_tool, sims.T)
        return base + 0.5 * np.where(np.isfinite(best), best, base)

    def rrf(i: int) -> Scores:
        f = d.feats[i]
        assert f.dense is not None
        lexical = lexical_scores(f, P)
        units = np.array([_rr(lexical[u], 5) + _rr(f.dense[u], 5) for u in range(len(lexical))])
        return fused(f) + 0.25 * _aggregate(units / 2)

    def margin_share(i: int) -> Callable[[int], float]:
        lexical = lexical_scores(d.feats[i], P)

        def share(u: int) -> float:
            top = np.sort(lexical[u])[::-1]
            confident = (top[0] - top[1]) / top[0] if top[0] > 0 else 0.0
            return float(np.clip(P.dense_weight - 0.2 * confident, 0.05, 0.95))

        return share

    def masked(i: int) -> Scores:
        base = d.feats[i].dense
        assert base is not None
        return _with_dense(d.feats[i], (base + d.masked_vectors[i] @ tools.T) / 2)

    return {
        "shipped": lambda i: fused(d.feats[i]),
        "both signals z-scored": lambda i: fused(
            d.feats[i], lexical_norm=_zscore, dense_norm=_zscore
        ),
        "cosine z-scored, dense 0.5": lambda i: fused(
            d.feats[i], replace(P, dense_weight=0.5), dense_norm=_zscore
        ),
        "+ RRF of the two signals (k 5, 0.25)": rrf,
        "dense + 0.5 x best description sentence": lambda i: fused(
            _with_dense(d.feats[i], sentences(i))
        ),
        "dense: minus 0.3 x server centroid": lambda i: fused(
            _with_dense(d.feats[i], d.unit_vectors[i] @ contrast.T)
        ),
        "dense: name view at half weight": lambda i: fused(
            _with_dense(d.feats[i], d.unit_vectors[i] @ half_name.T)
        ),
        "query: names and numbers masked (mean)": lambda i: fused(masked(i)),
        "+ 0.05 x server-local BM25": lambda i: fused(d.feats[i]) + 0.05 * d.local_lexical[i],
        "dense share - 0.2 x lexical margin": lambda i: fused(
            d.feats[i], dense_share=margin_share(i)
        ),
    }


def score(d: Prepared, scorer: Callable[[int], Scores]) -> dict[str, float]:
    keys = d.index.keys()
    rows = []
    for i, q in enumerate(d.queries):
        order = np.argsort(-scorer(i), kind="stable")[:MRR_DEPTH]
        rows.append(query_metrics([keys[j] for j in order], q.judgement()))
    return {
        m: round(float(np.mean([r[m] for r in rows])), 3) for m in ("R@5", "Hit@1", "Hit@5", "MRR")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metatool-sample", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    model = get_embedder("minilm")
    meta = load_queries(TRAIN / "metatool" / "queries.jsonl")
    random.Random(0).shuffle(meta)
    sets = {
        "livemcpbench": (
            BENCH / "livemcpbench" / "catalog.json",
            load_queries(BENCH / "livemcpbench" / "queries.jsonl"),
        ),
        "demo-single-step": (DEMO / "catalog.json", load_queries(DEMO / "single_step.jsonl")),
        "metatool-sample": (TRAIN / "metatool" / "catalog.json", meta[: args.metatool_sample]),
    }
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name, (catalog, queries) in sets.items():
        prepared = prepare(catalog, queries, model)
        for variant, scorer in variants(prepared).items():
            table.setdefault(variant, {})[name] = score(prepared, scorer)
        print(f"{name}: done", file=sys.stderr)
    if args.json:
        json.dump(table, sys.stdout, indent=2)
        print()
        return
    for variant, per_set in table.items():
        cells = " | ".join(
            f"{s} " + " / ".join(f"{v:.3f}" for v in m.values()) for s, m in per_set.items()
        )
        print(f"{variant}: {cells}")


if __name__ == "__main__":
    main()
