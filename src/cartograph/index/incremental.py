"""The serving corpus when its snapshot is missing: built from what did not change.

A restart whose cards all match a saved snapshot loads it
(:mod:`cartograph.index.snapshot`). When one card changed (or a server was
added), the corpus is *built* — and that used to mean parsing every card,
deriving every entry, tokenising every field and fitting every BM25 index
again: at 100k tools 4–6 minutes and ~1 GB for a one-card change. Here the
build starts from the newest snapshot of the same model and code (its
*base*) and costs about the changed cards:

* a server whose verified card digest and left-out tools are the ones the
  base was built from is copied from it: its tool names, its stored vectors
  (float16, as served) and its token ids (:mod:`cartograph.index.columns`) —
  the card is not parsed, tokenised or embedded;
* every other card is read once, checked against its verified digest
  (:meth:`VerifiedCards.read_intact`, P-SIG-3) and not kept parsed; its
  vectors come from its stored block (:mod:`cartograph.index.vector_store`)
  or, when it has none, from the embedding cache, which embeds only texts it
  has never seen;
* the BM25 and Jaccard indexes are refitted over all token ids with numpy
  (they depend on corpus-wide statistics), which takes seconds, not minutes.

With no base (the first start, or after a code change) every card takes the
second path, one at a time. The result is saved as the new snapshot, so the
next restart loads it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from cartograph.cards.verified import VerifiedCards
from cartograph.errors import PersistedIndexError
from cartograph.index.cache import EmbeddingCache
from cartograph.index.columns import ColumnsBuilder, ToolColumns
from cartograph.index.corpus import (
    LARGE_CORPUS_TOOLS,
    Corpus,
    corpus_from_columns,
    lexical_fields,
)
from cartograph.index.embedders.base import Embedder, Vectors
from cartograph.index.entries import (
    IndexEntry,
    ToolKey,
    copies_among,
    entries_from_cards,
    imitations,
)
from cartograph.index.name_copies import colliding
from cartograph.index.snapshot import BaseSnapshot, SnapshotStore, snapshot_key
from cartograph.index.vector_store import STORED_DTYPE, VectorStore, block_key, stored

ProgressCallback = Callable[[int, int], None]
_log = logging.getLogger(__name__)


def persisted_corpus(
    cards: VerifiedCards,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    store: VectorStore,
    exclude: frozenset[ToolKey],
    progress: ProgressCallback | None = None,
) -> Corpus:
    """The corpus from its snapshot when these cards were indexed before, else built and saved."""
    snapshots = SnapshotStore(store.state_dir)
    digests = {server: cards.digest(server) for server in cards}
    key = snapshot_key(embedder.model_id, embedder.dim, digests.items(), exclude)
    try:
        loaded = snapshots.load(embedder, key)
    except PersistedIndexError as exc:
        _log.warning("%s (%s)", exc.message, exc.code)
        snapshots.discard(embedder.model_id, key)
        loaded = None
    if loaded is not None:
        return loaded
    base = snapshots.base(embedder)
    columns, pieces = _plan(cards, embedder, store, exclude, base)
    # Lexical first, then the model (if anything is to be embedded) and the
    # matrix: the fitting's temporaries and the model are never held together.
    lexical = lexical_fields(columns)
    _embed_missing([p for p in pieces if isinstance(p, _Fresh)], embedder, cache, store, progress)
    vectors = _assemble(pieces, columns.size, embedder.dim, base)
    del base, pieces
    corpus = corpus_from_columns(columns, embedder, vectors, lexical)
    del vectors
    if corpus.size:
        try:
            snapshots.save(corpus, key, columns, digests, exclude)
        except OSError as exc:  # an accelerator: serving goes on, the next start rebuilds
            _log.warning("could not persist the index (%s): %s", type(exc).__name__, exc)
    return corpus


@dataclass
class _Fresh:
    """A re-indexed card's rows: its kept entries, and their vectors once known."""

    server: str
    entries: list[IndexEntry]
    keep: list[int]
    """Positions in ``entries`` that are indexed (the others are left out)."""
    block_key: str
    vectors: Vectors | None = None


_Piece = tuple[int, int] | _Fresh
"""Each indexed server's rows: a (start, stop) span of the base, or a re-indexed card."""


def _plan(
    cards: VerifiedCards,
    embedder: Embedder,
    store: VectorStore,
    exclude: frozenset[ToolKey],
    base: BaseSnapshot | None,
) -> tuple[ToolColumns, list[_Piece]]:
    """Token columns of every indexed tool, and where each server's vectors come from."""
    reusable = _reusable(cards, exclude, base)
    spans = base.columns.server_spans() if base is not None else {}
    builder = ColumnsBuilder(base.columns.vocabulary if base is not None else ())
    pieces: list[_Piece] = []
    names = _names(cards, reusable, base)
    groups = colliding(names)
    reusable -= _touched(groups, reusable, base)
    judging = [g for g in groups if any(server not in reusable for server, _ in g)]
    grouped = sorted({server for members in judging for server, _ in members})
    imitating = imitations(names)
    grouped_cards = {server: cards.read_intact(server) for server in grouped}
    judged = FederationNames(imitating, copies_among(grouped_cards, judging, imitating))
    for server in sorted(cards):
        if base is not None and server in reusable:
            start, stop = spans[server]
            builder.add_copied(server, base.columns, start, stop)
            pieces.append((start, stop))
            continue
        fresh = _fresh(cards, server, exclude, embedder, store, judged)
        builder.add_entries(server, [fresh.entries[i] for i in fresh.keep])
        if fresh.vectors is not None:
            fresh.entries = []  # only cards still to embed keep their entries
        if fresh.keep:
            pieces.append(fresh)
    _log.info(
        "index build: %d of %d servers copied from the last snapshot", len(reusable), len(cards)
    )
    return builder.build(), pieces


@dataclass(frozen=True)
class FederationNames:
    """What the whole federation's names decide about each tool's entry."""

    imitating: set[ToolKey]
    """Look-alike spellings of another tool's name (:func:`imitations`)."""
    copies: set[ToolKey]
    """Names another server's backed tool has (:mod:`cartograph.index.name_copies`)."""


def _touched(
    groups: Sequence[list[ToolKey]], reusable: set[str], base: BaseSnapshot | None
) -> set[str]:
    """Servers whose name judgements may differ from the base's: they are indexed afresh.

    A judgement spans a group of colliding names (:func:`colliding`), so it
    can change only for a group, now or in the base, with a member on a server
    whose rows are not copied (its card changed, or it was added or removed).
    Groups wholly on copied servers were judged on the same cards by the same
    code when the base was built.
    """
    before = colliding(_base_names(base)) if base is not None else []
    return {
        server
        for members in (*groups, *before)
        if any(s not in reusable for s, _ in members)
        for server, _ in members
    }


def _base_names(base: BaseSnapshot) -> list[ToolKey]:
    columns = base.columns
    servers = columns.servers
    return [
        (servers[int(columns.tool_server[row])], name)
        for row, name in enumerate(columns.tool_names)
    ]


def _names(
    cards: VerifiedCards, reusable: Iterable[str], base: BaseSnapshot | None
) -> list[ToolKey]:
    """Every tool of the federation, for the judgements that span servers.

    Servers copied from the last snapshot give their tool names from its
    columns, so no card is parsed for this; the others from their cards.
    """
    keys: list[ToolKey] = []
    copied = set(reusable) if base is not None else set()
    if base is not None:
        columns = base.columns
        for row, name in enumerate(columns.tool_names):
            server = columns.servers[int(columns.tool_server[row])]
            if server in copied:
                keys.append((server, name))
    for server in cards:
        if server not in copied:
            keys.extend((server, tool.name) for tool in cards.read_intact(server).body.tools)
    return keys


def _reusable(
    cards: VerifiedCards, exclude: frozenset[ToolKey], base: BaseSnapshot | None
) -> set[str]:
    """Servers whose rows in ``base`` are what a build from their card would give."""
    if base is None:
        return set()
    left_out, base_left_out = _by_server(exclude), _by_server(base.exclude)
    spans = base.columns.server_spans()
    return {
        server
        for server in cards
        if server in spans
        and base.cards.get(server) == cards.digest(server)
        and left_out.get(server, frozenset()) == base_left_out.get(server, frozenset())
    }


def _by_server(keys: Iterable[ToolKey]) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for server, tool in keys:
        out.setdefault(server, set()).add(tool)
    return {server: frozenset(tools) for server, tools in out.items()}


def _fresh(
    cards: VerifiedCards,
    server: str,
    exclude: frozenset[ToolKey],
    embedder: Embedder,
    store: VectorStore,
    judged: FederationNames,
) -> _Fresh:
    """One card read and checked (not kept parsed), and its stored vector block if any.

    The block covers every tool of the card (its key names every embedded
    text), so it stays valid whatever is left out; the kept rows are taken
    from it.
    """
    entries = entries_from_cards(
        {server: cards.read_intact(server)}, imitating=judged.imitating, copies=judged.copies
    )
    keep = [i for i, entry in enumerate(entries) if entry.key not in exclude]
    texts = [e.text for e in entries] + [e.name_text for e in entries]
    key = block_key(embedder.model_id, cards.digest(server), texts)
    fresh = _Fresh(server, entries, keep, key)
    block = store.load(embedder.model_id, key, len(entries), embedder.dim)
    if block is not None:
        fresh.vectors = np.array(block[keep], dtype=STORED_DTYPE)
    return fresh


def _embed_missing(
    pieces: Sequence[_Fresh],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    store: VectorStore,
    progress: ProgressCallback | None,
) -> None:
    """Embed the cards without a stored block together (one batched pass), store their blocks."""
    missing = [p for p in pieces if p.vectors is None]
    if not missing:
        return
    rows = [entry for piece in missing for entry in piece.entries]
    fresh = stored(entry_vectors(rows, embedder, cache, progress))
    offset = 0
    for piece in missing:
        block = fresh[offset : offset + len(piece.entries)]
        store.save(embedder.model_id, piece.block_key, block)
        piece.vectors = np.array(block[piece.keep], dtype=STORED_DTYPE)
        piece.entries = []
        offset += len(block)


def _assemble(pieces: Sequence[_Piece], size: int, dim: int, base: BaseSnapshot | None) -> Vectors:
    """One matrix in row order: float16 from LARGE_CORPUS_TOOLS (as served), else float32."""
    dtype = STORED_DTYPE if size >= LARGE_CORPUS_TOOLS else np.float32
    out: Vectors = np.empty((size, dim), dtype=dtype)
    row = 0
    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(base.vectors_file()) if base is not None else None
        for piece in pieces:
            if isinstance(piece, _Fresh):
                block = piece.vectors
                piece.vectors = None
            else:
                assert base is not None and handle is not None  # spans come from a base
                block = base.read_rows(handle, piece[0], piece[1])
            assert block is not None
            out[row : row + len(block)] = block
            row += len(block)
    if row != size:
        raise ValueError(f"assembled {row} vector rows for {size} tools")
    return out


def tool_vectors(text_vectors: Vectors, name_vectors: Vectors) -> Vectors:
    """Each tool's vector: the normalised sum of its full-text and name views.

    One vector per tool (no extra memory or query cost) that is close to a
    task phrased like the tool's description *or* like its name. Measured on
    LiveMCPBench: flat dense R@5 0.392 -> 0.423, MRR 0.485 -> 0.530; hybrid
    held out 0.434 -> 0.445 (docs/retrieval.md).
    """
    summed = text_vectors.astype(np.float32) + name_vectors.astype(np.float32)
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    out: Vectors = (summed / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)
    return out


def entry_vectors(
    entries: Sequence[IndexEntry],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    progress: ProgressCallback | None,
) -> Vectors:
    """Each entry's tool vector (:func:`tool_vectors`), through the embedding cache if any."""
    views = [[e.text for e in entries], [e.name_text for e in entries]]
    if cache is not None and entries:
        # The sum of both views, gathered a chunk at a time: one matrix at the peak.
        return _unit_rows(cache.embed_summed(embedder, views, progress=progress))
    both = _embed(views[0] + views[1], embedder, cache, progress)
    return tool_vectors(both[: len(entries)], both[len(entries) :])


def _unit_rows(vectors: Vectors) -> Vectors:
    """``vectors`` with every row scaled to unit length, in place (as :func:`tool_vectors`)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms == 0.0, 1.0, norms)
    return vectors


def _embed(
    texts: list[str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    progress: ProgressCallback | None,
) -> Vectors:
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    if cache is not None:
        return cache.embed_cached(embedder, texts, progress=progress)
    return embedder.embed(texts)


__all__ = ["entry_vectors", "persisted_corpus", "tool_vectors"]
