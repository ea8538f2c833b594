"""Abstention against the rest of the world: does a task fit *some other* tool better than ours?

A raw cosine threshold cannot tell "nothing here fits" from "this is phrased in
everyday words": a servable "look up what I told you about my coffee" scores
0.14 while "set an alarm for 6:30" scores 0.32 against the time server. What
separates them is a comparison: an out-of-catalog task usually fits some tool
of a broad, general catalog clearly better than any tool of ours, while a
servable one does not.

The background (``background/world.json``, built by
``benchmarks/build_background.py`` from training data only) is MetaTool's 199
everyday products (MIT) beside the 534 functions of the BFCL training half
that answer one of its questions (Apache-2.0): for each, the texts the index
would embed for a template card of that tool and five of its example tasks.
Texts are shipped, so any model can embed them (memoised per model id, through
the embedding cache when one is given); for the shipped MiniLM the vectors are
shipped too (``background/minilm.npz``, pinned by sha256 below), so the first
task of a process does not pay ~15 s of embedding.

Background tools that duplicate a capability of *this* catalog (time, web
search, SQL, calculators…) must not make it abstain. The mask is derived from
the catalog alone, never from a query: a background tool is dropped when its
median example task fits some catalog tool at least as well as it fits the
background tool itself (:func:`coverage` >= 0). The open-world margin is then::

    margin  = max over the task and its steps of (best catalog cosine - best kept background cosine)

and discover abstains when ``margin < -delta`` *or* the best cosine is below
the cosine threshold (:mod:`cartograph.index.discover`). ``delta`` is fitted
per model id, jointly with that threshold, on training data only
(``benchmarks/abstention_tradeoff.py``) and stored in :data:`CALIBRATED_DELTAS`;
a model without one uses the cosine threshold alone.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from cartograph.errors import ModelIntegrityError
from cartograph.index.cache import EmbeddingCache
from cartograph.index.corpus import Corpus, matrix_product
from cartograph.index.embedders.base import Embedder, Vectors
from cartograph.index.embedders.minilm.embedder import MINILM_MODEL_ID

BACKGROUND_FILE: Final = "world.json"
BACKGROUND_VECTORS_FILE: Final = "minilm.npz"
BACKGROUND_VECTORS_SHA256: Final = (
    "94654738b080ba6d0165257621bed3cf863c9a82eb1fc4fd19a78f41042c9d72"
)
"""sha256 of :data:`BACKGROUND_VECTORS_FILE` as ``build_background.py`` wrote it."""

# How much better (cosine) a background tool must fit a task than every tool of
# ours before discover abstains, per model id; the cosine threshold it is paired
# with is discover's DEFAULT_ABSTAIN_THRESHOLD. Fitted together on the training
# sets only, at most 0.5 % false abstention on each (BFCL training half, MetaTool
# kept tools): ``benchmarks/abstention_tradeoff.py --max-false 0.005``. Held out,
# the pair caught 48.1 % of the demo's out-of-catalog tasks against 25.0 % for the
# cosine alone, at the same false rates (docs/retrieval.md, *Abstention*).
CALIBRATED_DELTAS: Final[dict[str, float]] = {MINILM_MODEL_ID: 0.2375}


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


@dataclass(frozen=True)
class BackgroundTexts:
    """The shipped background's texts in the order they are embedded."""

    names: tuple[str, ...]
    everything: list[str]
    """Each tool's index text, then each tool's name text, then every example task."""
    owner: npt.NDArray[np.int64]


def background_texts(doc: dict[str, Any]) -> BackgroundTexts:
    """What to embed for the background document ``doc`` (``world.json``)."""
    tools = doc["tools"]
    tasks = [task for t in tools for task in t["tasks"]]
    return BackgroundTexts(
        names=tuple(t["name"] for t in tools),
        everything=[t["text"] for t in tools] + [t["name_text"] for t in tools] + tasks,
        owner=np.array([i for i, t in enumerate(tools) for _ in t["tasks"]], dtype=np.int64),
    )


def split_vectors(vectors: Vectors, n: int) -> tuple[Vectors, Vectors]:
    """(unit tool vectors, task vectors) from the vectors of :attr:`BackgroundTexts.everything`.

    A tool is its index text and its name text together, as our own tools are.
    """
    tools = vectors[:n].astype(np.float32) + vectors[n : 2 * n].astype(np.float32)
    return _unit(tools), vectors[2 * n :]


def texts_digest(texts: Sequence[str]) -> str:
    """One sha256 over ``texts`` in order: shipped vectors are used only for these texts."""
    return hashlib.sha256(json.dumps(list(texts), ensure_ascii=False).encode()).hexdigest()


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
    folder = files("cartograph.index") / "background"
    doc = json.loads((folder / BACKGROUND_FILE).read_text(encoding="utf-8"))
    texts = background_texts(doc)
    shipped = _shipped_vectors(folder.joinpath(BACKGROUND_VECTORS_FILE).read_bytes(), texts)
    if shipped is not None and embedder.model_id == shipped[0]:
        tools, tasks = shipped[1], shipped[2]
    else:
        vectors = (
            cache.embed_cached(embedder, texts.everything)
            if cache is not None
            else embedder.embed(texts.everything)
        )
        tools, tasks = split_vectors(vectors, len(texts.names))
    return Background(
        names=texts.names,
        tools=_unit(tools),
        tasks=_unit(tasks.astype(np.float32)),
        owner=texts.owner,
        provenance=str(doc["provenance"]),
    )


def _shipped_vectors(data: bytes, texts: BackgroundTexts) -> tuple[str, Vectors, Vectors] | None:
    """(model id, tool vectors, task vectors) from the shipped file, if it is for ``texts``.

    The file is checked against its pin first: a changed file is a damaged
    install, not a reason to embed quietly.
    """
    actual = hashlib.sha256(data).hexdigest()
    if actual != BACKGROUND_VECTORS_SHA256:
        raise ModelIntegrityError(
            f"background vectors {BACKGROUND_VECTORS_FILE} fail their sha256 pin "
            f"(expected {BACKGROUND_VECTORS_SHA256}, got {actual}); the install is "
            "corrupted or was modified: reinstall cartograph",
            file=BACKGROUND_VECTORS_FILE,
            expected=BACKGROUND_VECTORS_SHA256,
            actual=actual,
        )
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        if str(npz["texts_sha256"]) != texts_digest(texts.everything):
            return None
        return str(npz["model_id"]), npz["tools"], npz["tasks"]


class OpenWorld:
    """The background masked against one catalog (a corpus), ready to score tasks."""

    def __init__(self, background: Background, corpus: Corpus) -> None:
        self.background = background
        self.coverage = coverage(background, best_of_ours(corpus, background.tasks))
        self._kept_tools = np.ascontiguousarray(background.tools[self.kept()])

    def kept(self) -> npt.NDArray[np.bool_]:
        """Background tools that stand for the rest of the world here (not duplicates of ours)."""
        return np.asarray(self.coverage < 0.0)

    def margin(self, rows: Vectors, ours: Vectors) -> float:
        """:func:`margin` against this catalog's mask (its kept tools gathered once)."""
        return _margin(self._kept_tools, rows, ours)


def margin(background: Background, covered: Vectors, rows: Vectors, ours: Vectors) -> float:
    """max over ``rows`` (task, steps) of best-of-ours minus best kept background cosine.

    ``ours``: each row's best cosine to our catalog (the ranker's product);
    ``covered``: :func:`coverage` of our catalog. A background tool is kept
    (stands for the rest of the world) when its coverage is below 0. With no
    background tool kept there is no evidence against us: 1.0.
    """
    return _margin(background.tools[covered < 0.0], rows, ours)


def _margin(kept: Vectors, rows: Vectors, ours: Vectors) -> float:
    if not len(kept):
        return 1.0
    # One thread: a BLAS call this small costs more in woken threads than in work.
    theirs = matrix_product(np.atleast_2d(rows), kept).max(axis=1)
    return float(np.max(np.asarray(ours) - theirs))


def coverage(background: Background, ours: Vectors) -> Vectors:
    """Per background tool: the median over its example tasks of (best of ours - its own cosine).

    ``ours``: each background task's best cosine to any tool of our catalog
    (:func:`best_of_ours`). High: our catalog already serves what that tool is for.
    """
    gap = ours - np.einsum("td,td->t", background.tasks, background.tools[background.owner])
    out: Vectors = np.array(
        [np.median(gap[background.owner == i]) for i in range(len(background.names))],
        dtype=np.float32,
    )
    return out


def best_of_ours(corpus: Corpus, rows: Vectors) -> Vectors:
    """Each row's best cosine to any tool of ``corpus`` (-1 for an empty one).

    A block of tools at a time: the background's ~1,900 tasks against 100,000
    tools would otherwise hold a 0.8 GB product at once.
    """
    best = np.full(len(rows), -1.0, dtype=np.float32)
    for start in range(0, corpus.size, _TOOL_BLOCK):
        positions = np.arange(start, min(start + _TOOL_BLOCK, corpus.size))
        best = np.maximum(best, corpus.tool_similarities_at(rows, positions).max(axis=1))
    return best


_TOOL_BLOCK: Final = 8192


def _unit(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: Vectors = (vectors / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)
    return out
