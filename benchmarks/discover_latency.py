#!/usr/bin/env python3
"""Discover latency, index build time and peak memory at 527, 10k and 100k tools.

    python benchmarks/discover_latency.py [--scales livemcpbench,10000,100000] [--json]
        [--src NAME=PATH ... [--python NAME=EXE ...]]

Each scale runs in its own subprocess, so its peak RSS (``ru_maxrss``) is its
own: that process builds verified cards (template generator, ephemeral key),
builds the ``ToolIndex`` with the shipped MiniLM embedder through the on-disk
``EmbeddingCache``, then times ``discover()`` in-process, query embedding
included, for every method asked for. An ``embedder`` row measures the model
alone: cold start, ms per query, texts/s.

**Vectors at 10k/100k.** Embedding 100k texts with MiniLM takes ~12 minutes on
two cores, so the synthetic scales do not embed every tool text. A separate
*prepare* subprocess embeds the ~210 unique parts the synthetic tools are made
of (verbs, objects, domains, qualifiers) with the real model, composes each
tool's vector from its parts plus a small deterministic jitter, and writes
them into the cache under the real model id. The measured process then builds
from that warm cache — exactly the restart path of a real deployment — and
embeds every *query* with the real model. ``cold_embed_s_est`` extrapolates a
cold build from the measured texts/s. LiveMCPBench (527 tools) is embedded for
real (cold on the first run; later runs hit the cache, reported as ``cached``).

``--src NAME=PATH`` (repeatable) measures other checkouts' ``src`` folders,
each child with that tree first on the path and a cache of its own, scale by
scale, trees interleaved; ``--python NAME=EXE`` runs a tree's children with
an interpreter whose environment was built from that tree's own lock or
``pyproject.toml``. Without ``--src`` this checkout is measured as ``this``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any, Final

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from synthetic_catalog import (  # noqa: E402
    DOMAINS,
    OBJECTS,
    QUALIFIERS,
    VERBS,
    synthetic_catalog,
    synthetic_queries,
)
from trees import add_tree_options, interpreters_from, sources_from  # noqa: E402

DEFAULT_SCALES = "livemcpbench,10000,100000"
DEFAULT_METHODS = "hybrid,two-stage,dense,bm25"
TARGETS = {"livemcpbench": (5.0, None), "100000": (25.0, 400.0)}


def bench_dir() -> Path:
    default = REPO.parent / "shared" / "bench"
    return Path(os.environ.get("CARTOGRAPH_BENCH_DIR", default))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def load_scale(scale: str, queries: int) -> tuple[Any, list[str], dict[Any, Any] | None]:
    """(catalog, query texts, synthetic tool parts or None) for a scale name."""
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.eval.data import load_queries

    if scale == "livemcpbench":
        folder = bench_dir() / "livemcpbench"
        if not (folder / "catalog.json").exists():
            raise SystemExit(f"LiveMCPBench not found in {folder} (set CARTOGRAPH_BENCH_DIR)")
        texts = [q.query for q in load_queries(folder / "queries.jsonl")]
        return load_catalog(folder / "catalog.json"), texts[:queries], None
    catalog, parts = synthetic_catalog(int(scale))
    return catalog, synthetic_queries(queries), parts


# --- prepare: compose synthetic vectors into the cache ------------------------


class _TableEmbedder:
    """Serves precomputed vectors under the real model id, to fill the cache."""

    def __init__(self, model_id: str, table: dict[str, np.ndarray]) -> None:
        self.model_id = model_id
        self.dim = 384
        self._table = table

    def embed(self, texts: Any) -> np.ndarray:
        return np.stack([self._table[t] for t in texts]).astype(np.float32)


def throwaway_cards(catalog: Any) -> Any:
    """Cards signed in memory with a throwaway key, under the name the tree gives that."""
    from cartograph.cards import attest

    sign = getattr(attest, "attest_with_unsafe_throwaway_key", None)
    if sign is None:  # trees before 9145342 called it attest_in_memory
        sign = attest.attest_in_memory
    return sign(catalog)


def prepare(scale: str, state_dir: Path) -> dict[str, Any]:
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.embedders import get_embedder
    from cartograph.index.entries import entries_from_cards

    started = time.perf_counter()
    catalog, _, parts = load_scale(scale, 0)
    assert parts is not None
    entries = entries_from_cards(throwaway_cards(catalog))
    model = get_embedder("minilm")
    units = sorted({*VERBS, *OBJECTS, *DOMAINS, *QUALIFIERS})
    unit_vectors = dict(zip(units, model.embed(units), strict=True))
    table: dict[str, np.ndarray] = {}
    for e in entries:
        p = parts[(e.server, e.tool)]
        jitter = np.random.default_rng(zlib.crc32(f"{e.server}/{e.tool}".encode()))
        v = (
            unit_vectors[p.verb]
            + 1.5 * unit_vectors[p.obj]
            + 0.7 * unit_vectors[p.domain]
            + 0.3 * unit_vectors[p.qualifier]
            + 0.05 * jitter.standard_normal(384).astype(np.float32)
        )
        table[e.text] = v / np.linalg.norm(v)
        # The name view ("<server>: <tool name>") is the tool's action and object.
        n = unit_vectors[p.verb] + 1.5 * unit_vectors[p.obj] + 0.5 * unit_vectors[p.domain]
        table.setdefault(e.name_text, n / np.linalg.norm(n))
    cache = EmbeddingCache(state_dir)
    texts = [e.text for e in entries] + [e.name_text for e in entries]
    cache.embed_cached(_TableEmbedder(model.model_id, table), texts)
    return {"prepared": len(entries), "units": len(units), "s": time.perf_counter() - started}


# --- measure one scale ----------------------------------------------------------


def measure(scale: str, state_dir: Path, queries: int, methods: list[str]) -> dict[str, Any]:
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.discover import discover
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    t0 = time.perf_counter()
    catalog, tasks, _ = load_scale(scale, queries)
    t1 = time.perf_counter()
    cards = throwaway_cards(catalog)
    t2 = time.perf_counter()
    cache = EmbeddingCache(state_dir)
    index = ToolIndex.build(cards, get_embedder("minilm"), cache=cache)
    t3 = time.perf_counter()
    rss_built = peak_rss_mb()
    first = time.perf_counter()
    discover(index, cards, tasks[0])  # loads the model if the cache served every tool
    first_ms = (time.perf_counter() - first) * 1000
    row: dict[str, Any] = {
        "scale": scale,
        "tools": index.size,
        "servers": len(index.corpus.servers),
        "queries": len(tasks),
        "catalog_s": round(t1 - t0, 2),
        "cards_s": round(t2 - t1, 2),
        "index_build_s": round(t3 - t2, 2),
        "embedded_now": cache.last.misses,
        "cached": cache.last.hits,
        "first_query_ms": round(first_ms, 1),
        "peak_rss_after_build_mb": round(rss_built, 1),
        "methods": {m: _time_discover(index, cards, tasks, m) for m in methods},
    }
    row["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return row


def _time_discover(index: Any, cards: Any, tasks: list[str], method: str) -> dict[str, float]:
    """``method`` may end in ``+pooled`` (step vectors pooled from one model run),
    ``+steps`` (one model run per step) or ``+learning`` (learning from use on, its log
    full: :data:`LEARNED_TASKS` tasks); otherwise the measured tree's own default."""
    method, _, variant = method.partition("+")
    default = getattr(index, "pooled_steps", False)
    if variant in ("pooled", "steps"):
        index.pooled_steps = variant == "pooled"
    try:
        return _timed(index, cards, tasks, method, variant)
    finally:
        index.pooled_steps = default


def _timed(index: Any, cards: Any, tasks: list[str], method: str, variant: str) -> dict[str, float]:
    reranker = _full_learning(index, cards) if variant == "learning" else None
    for task in tasks[:3]:
        discover_once(index, cards, task, method, reranker)
    times, cpu = [], []
    for task in tasks:
        forget_query_vectors()  # every timed task is first seen, as before the cache
        start, start_cpu = time.perf_counter(), time.process_time()
        discover_once(index, cards, task, method, reranker)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    times.sort()
    # CPU time (all threads) is robust to other processes on a shared machine;
    # wall time is what an agent waits.
    return {
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(times[min(len(times) - 1, int(0.99 * len(times)))], 2),
        "mean_ms": round(statistics.fmean(times), 2),
        "cpu_p50_ms": round(statistics.median(cpu), 2),
        **_repeated_ms(index, cards, tasks, method, reranker),
        **_embedding_ms(index, tasks, method),
    }


def discover_once(index: Any, cards: Any, task: str, method: str, reranker: Any = None) -> Any:
    """``discover(..., k=5)``; ``reranker`` passed only when there is one (older trees
    take no such argument), so any checkout since 0774969 can be measured."""
    from cartograph.index.discover import discover

    extra = {} if reranker is None else {"reranker": reranker}
    return discover(index, cards, task, k=5, method=method, **extra)


def best_similarity(ctx: Any) -> float:
    """discover's confidence: ``QueryContext.best_similarity`` where the checkout has it,
    else ``task_confidence`` (older trees)."""
    best = getattr(ctx, "best_similarity", None)
    if best is not None:
        return float(best())
    from cartograph.index.discover import task_confidence

    return float(task_confidence(ctx))


def forget_query_vectors() -> None:
    """Empty the query-vector LRU, where the measured checkout has one."""
    try:
        from cartograph.index.embedders.query_cache import QUERY_VECTORS
    except ImportError:
        return
    QUERY_VECTORS.clear()


def _repeated_ms(
    index: Any, cards: Any, tasks: list[str], method: str, reranker: Any
) -> dict[str, float]:
    """Each task asked twice in a row, the second timed: what a repeated task costs."""
    times, cpu = [], []
    for task in tasks:
        forget_query_vectors()
        discover_once(index, cards, task, method, reranker)
        start, start_cpu = time.perf_counter(), time.process_time()
        discover_once(index, cards, task, method, reranker)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return {
        "repeat_p50_ms": round(statistics.median(times), 2),
        "repeat_cpu_p50_ms": round(statistics.median(cpu), 2),
    }


LEARNED_TASKS = 10_000
"""The default ``[learning] max_tasks``: the most evidence a catalog holds in memory."""


def _full_learning(index: Any, cards: Any) -> Any:
    """A catalog's learning with a full log: every logged task a near-copy of a tool's vector
    (so neighbours are found and vote), served by that tool and two others."""
    import anyio

    from cartograph.config.model import LearningConfig
    from cartograph.learning.catalog import CatalogLearning, card_digests
    from cartograph.learning.sqlite import SqliteUsageStore
    from cartograph.learning.store import CallRecord, TaskRecord

    rng = np.random.default_rng(0)
    keys, vectors = index.keys(), index.corpus.tool_vectors
    digests = card_digests(cards)
    store = SqliteUsageStore(Path(tempfile.mkdtemp(prefix="cartograph-learn-")) / "usage.sqlite3")
    model = index.corpus.embedder.model_id
    for number in range(LEARNED_TASKS):
        picks = rng.choice(len(keys), size=3, replace=False)
        vector = vectors[picks[0]] + rng.normal(0.0, 0.02, vectors.shape[1]).astype(np.float32)
        vector /= np.linalg.norm(vector)
        task_id = store.add_task(
            TaskRecord("bench", "s", f"task {number}", model, vector, (), float(time.time()))
        )
        for pick in picks:
            server, tool = keys[pick]
            store.add_call(CallRecord(task_id, server, tool, digests[server][tool], "ok", 0.0))
    learning = CatalogLearning(
        store, catalog="bench", embedder=index.corpus.embedder, config=LearningConfig()
    )
    anyio.run(learning.sync, cards)
    return learning


def _embedding_ms(index: Any, tasks: list[str], method: str) -> dict[str, float]:
    """Median cost of the query embeddings alone: what ``method`` asks the model for."""
    if method not in ("hybrid", "dense", "two-stage"):
        return {"embed_p50_ms": 0.0, "embed_cpu_p50_ms": 0.0}
    wall, cpu = [], []
    for task in tasks:
        ctx = index.context(task)
        steps = method == "hybrid" and len(ctx.query.clauses) > 1
        forget_query_vectors()
        start, start_cpu = time.perf_counter(), time.process_time()
        ctx.vectors() if steps else ctx.whole_vector()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return {
        "embed_p50_ms": round(statistics.median(wall), 2),
        "embed_cpu_p50_ms": round(statistics.median(cpu), 2),
    }


def measure_embedder() -> dict[str, Any]:
    start = time.perf_counter()
    from cartograph.index.embedders import get_embedder

    model = get_embedder("minilm")
    model.embed(["warm up"])
    cold = time.perf_counter() - start
    rss_loaded = peak_rss_mb()
    short = ["get the weather forecast", "delete a git branch", "send a slack message"]
    tasks = synthetic_queries(60)
    short_ms = _per_call_ms(model, short * 20)
    task_ms = _per_call_ms(model, tasks)
    texts = [f"Tool {i}: {t}. Returns JSON with the results." for i, t in enumerate(tasks * 4)]
    start = time.perf_counter()
    model.embed(texts)
    rate = len(texts) / (time.perf_counter() - start)
    return {
        "scale": "embedder",
        "cold_start_s": round(cold, 3),
        "short_query_p50_ms": short_ms,
        "task_query_p50_ms": task_ms,
        "texts_per_s": round(rate, 1),
        "rss_after_load_mb": round(rss_loaded, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _per_call_ms(model: Any, texts: list[str]) -> float:
    times = []
    for text in texts:
        start = time.perf_counter()
        model.embed([text])
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


# --- driver -----------------------------------------------------------------------


THIS: Final = Path(__file__).resolve().parents[1] / "src"

PYTHONS: dict[Path, str] = {}
"""The interpreter per source tree (``--python``); a tree not named runs with this one's."""


def _child(args: list[str], src: Path = THIS) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH")) if p)
    cmd = [PYTHONS.get(src, sys.executable), str(Path(__file__).resolve()), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run_all(
    scales: list[str],
    state_dir: Path,
    queries: int,
    methods: str,
    sources: dict[str, Path] | None = None,
) -> dict[str, Any]:
    """Every scale for every source, sources interleaved; each source has its own cache."""
    trees = sources or {"this": THIS}
    embedders = {name: _child(["--child", "embedder"], src) for name, src in trees.items()}
    rows = [{"source": name, **row} for name, row in embedders.items()]
    for scale in scales:
        for name, src in trees.items():
            state = state_dir / name
            if scale != "livemcpbench":
                print(f"[{name}] preparing {scale} …", file=sys.stderr)
                _child(["--prepare", scale, "--state-dir", str(state)], src)
            print(f"[{name}] measuring {scale} …", file=sys.stderr)
            row = _child(
                [
                    *("--child", scale, "--state-dir", str(state)),
                    *("--queries", str(queries), "--methods", methods),
                ],
                src,
            )
            row["cold_embed_s_est"] = round(row["tools"] / embedders[name]["texts_per_s"], 1)
            rows.append({"source": name, **row})
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in load], "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    embedders = [row for row in result["rows"] if row["scale"] == "embedder"]
    rows = [row for row in result["rows"] if row["scale"] != "embedder"]
    lines = [
        f"Embedder (MiniLM int8), {emb['source']}: cold start {emb['cold_start_s']} s, short "
        f"query {emb['short_query_p50_ms']} ms, task query {emb['task_query_p50_ms']} ms (p50), "
        f"{emb['texts_per_s']} texts/s, RSS after load {emb['rss_after_load_mb']} MB"
        for emb in embedders
    ]
    lines += [
        f"(cpus {result['cpus']}, load average {result['loadavg']})",
        "",
        "| source | scale | tools | servers | cards s | index build s | cached "
        "| cold embed s (est) | method | discover p50 ms | p99 ms | CPU p50 ms | embed p50 ms "
        "| peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for method, t in row["methods"].items():
            lines.append(
                f"| {row['source']} | {row['scale']} | {row['tools']} | {row['servers']} "
                f"| {row['cards_s']} "
                f"| {row['index_build_s']} | {row['cached']} | {row['cold_embed_s_est']} "
                f"| {method} | {t['p50_ms']} | {t['p99_ms']} | {t['cpu_p50_ms']} "
                f"| {t['embed_p50_ms']} | {row['peak_rss_mb']} |"
            )
    return "\n".join(lines)


def add_scale_options(parser: argparse.ArgumentParser) -> None:
    """``--scales``, ``--methods``, ``--queries``: what ``serving_scale.py`` measures too."""
    parser.add_argument("--scales", default=DEFAULT_SCALES)
    parser.add_argument("--methods", default=DEFAULT_METHODS)
    parser.add_argument("--queries", type=int, default=200)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_scale_options(parser)
    parser.add_argument("--state-dir", type=Path, help="embedding cache (default: temporary)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    add_tree_options(parser)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "embedder":
        print(json.dumps(measure_embedder()))
        return 0
    if args.child:
        row = measure(args.child, args.state_dir, args.queries, args.methods.split(","))
        print(json.dumps(row))
        return 0
    if args.prepare:
        print(json.dumps(prepare(args.prepare, args.state_dir)))
        return 0
    with tempfile.TemporaryDirectory(prefix="cartograph-bench-") as tmp:
        state = args.state_dir or Path(tmp)
        sources = sources_from(args.src)
        PYTHONS.update(interpreters_from(args.python, sources))
        result = run_all(args.scales.split(","), state, args.queries, args.methods, sources or None)
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
