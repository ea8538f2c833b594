"""Abstention against the rest of the world: does a task fit *some other* tool better than ours?

A raw cosine threshold cannot tell "nothing here fits" from "this is phrased in
everyday words": a servable "look up what I told you about my coffee" scores
0.14 while "set an alarm for 6:30" scores 0.32 against the time server. What
separates them is a comparison: an out-of-catalog task usually fits some tool
of a broad, general catalog (mail, bookings, payments, music) clearly better
than any tool of ours, while a servable one does not.

The background is MetaTool's 199 everyday tools (MIT licence,
``background/metatool.json``, built by ``benchmarks/build_background.py``): the
texts the index would embed for a template card of each tool, and five of its
example tasks. Texts, not vectors, are shipped; they are embedded with the
serving model (memoised per model id, through the embedding cache when one is
given), so nothing here is tied to one embedder.

Background tools that duplicate a capability of *this* catalog (time, web
search, SQL, calculators…) must not make it abstain. The mask is derived from
the catalog alone, never from a query: a background tool is dropped when its
median example task fits some catalog tool at least as well as it fits the
background tool itself (:func:`coverage` >= 0). The decision is then::

    margin  = max over the task and its steps of (best catalog cosine - best kept background cosine)
    abstain = margin < -delta

``delta`` is calibrated per model id (``benchmarks/calibrate_abstention.py``)
and stored in :data:`CALIBRATED_DELTAS`; a model without one, which is every
model today (see there why), uses the raw cosine threshold
(:mod:`cartograph.index.discover`). ``discover(..., open_world_delta=...)``
applies the rule explicitly.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from importlib.resources import files
from typing import Final

import numpy as np
import numpy.typing as npt

from cartograph.index.cache import EmbeddingCache
from cartograph.index.corpus import Corpus
from cartograph.index.embedders.base import Embedder, Vectors

BACKGROUND_FILE: Final = "metatool.json"

# How much better (cosine) a background tool must fit a task than every tool of
# ours before discover abstains, per model id. Empty: the rule is measured but
# not on by default. For the shipped MiniLM the calibrated delta is
# MINILM_MEASURED_DELTA (at most 2 % false abstention on each servable set,
# template cards); held out it caught 56 % of out-of-catalog tasks against 33 %
# for the raw cosine at the same false rate, but it abstains on the demo's own
# check "remember that Alice works at Acme as an engineer" (a background hiring
# tool matches "engineer"); docs/retrieval.md.
CALIBRATED_DELTAS: Final[dict[str, float]] = {}
MINILM_MEASURED_DELTA: Final = 0.05


def calibrated_delta(model_id: str) -> float | None:
    """The calibrated delta for ``model_id`` (or its batched variant ``<id>:batchN``), if any."""
    if model_id in CALIBRATED_DELTAS:
        return CALIBRATED_DELTAS[model_id]
    base = model_id.rsplit(":batch", 1)[0]
    return CALIBRATED_DELTAS.get(base)


@dataclass(frozen=True)
class Background:
    """The background catalog embedded by one model: tool vectors, task vectors, task owners."""

    names: tuple[str, ...]
    tools: Vectors
    tasks: Vectors
    owner: npt.NDArray[np.int64]
    """``owner[j]``: the background tool whose example task ``tasks[j]`` is."""
    provenance: str


_memo: dict[str, Background] = {}
_memo_lock = threading.Lock()


def background_for(embedder: Embedder, cache: EmbeddingCache | None = None) -> Background:
    """The shipped background embedded by ``embedder``, once per model id per process."""
    with _memo_lock:
        found = _memo.get(embedder.model_id)
        if found is None:
            found = _embed_background(embedder, cache)
            _memo[embedder.model_id] = found
        return found


def _embed_background(embedder: Embedder, cache: EmbeddingCache | None) -> Background:
    doc = json.loads((files("cartograph.index") / "background" / BACKGROUND_FILE).read_text())
    tools = doc["tools"]
    texts = [t["text"] for t in tools]
    names = [t["name_text"] for t in tools]
    tasks = [task for t in tools for task in t["tasks"]]
    owner = np.array([i for i, t in enumerate(tools) for _ in t["tasks"]], dtype=np.int64)
    everything = texts + names + tasks
    vectors = (
        cache.embed_cached(embedder, everything)
        if cache is not None
        else embedder.embed(everything)
    )
    n = len(tools)
    summed = vectors[:n].astype(np.float32) + vectors[n : 2 * n].astype(np.float32)
    return Background(
        names=tuple(t["name"] for t in tools),
        tools=_unit(summed),
        tasks=_unit(vectors[2 * n :].astype(np.float32)),
        owner=owner,
        provenance=str(doc["provenance"]),
    )


class OpenWorld:
    """The background masked against one catalog (a corpus), ready to score tasks."""

    def __init__(self, background: Background, corpus: Corpus) -> None:
        self.background = background
        self.coverage = coverage(background, corpus.tool_similarities(background.tasks))

    def kept(self) -> npt.NDArray[np.bool_]:
        """Background tools that stand for the rest of the world here (not duplicates of ours)."""
        return np.asarray(self.coverage < 0.0)

    def margin(self, rows: Vectors, ours: Vectors) -> float:
        """:func:`margin` against this catalog's mask."""
        return margin(self.background, self.coverage, rows, ours)


def margin(background: Background, covered: Vectors, rows: Vectors, ours: Vectors) -> float:
    """max over ``rows`` (task, steps) of best-of-ours minus best kept background cosine.

    ``ours``: each row's best cosine to our catalog (the ranker's product);
    ``covered``: :func:`coverage` of our catalog. A background tool is kept
    (stands for the rest of the world) when its coverage is below 0. With no
    background tool kept there is no evidence against us: 1.0.
    """
    keep = covered < 0.0
    if not keep.any():
        return 1.0
    theirs = (np.atleast_2d(rows) @ background.tools[keep].T).max(axis=1)
    return float(np.max(np.asarray(ours) - theirs))


def coverage(background: Background, task_sims: Vectors) -> Vectors:
    """Per background tool: the median over its example tasks of (best of ours - its own cosine).

    ``task_sims``: every background task's cosine to every tool of our catalog
    (tasks x tools). High: our catalog already serves what that tool is for.
    """
    gap = _row_max(task_sims) - np.einsum(
        "td,td->t", background.tasks, background.tools[background.owner]
    )
    out: Vectors = np.array(
        [np.median(gap[background.owner == i]) for i in range(len(background.names))],
        dtype=np.float32,
    )
    return out


def _row_max(sims: Vectors) -> Vectors:
    out: Vectors = sims.max(axis=1) if sims.size else np.full(sims.shape[0], -1.0)
    return out


def _unit(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: Vectors = (vectors / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)
    return out
