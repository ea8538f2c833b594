"""The tool index: verified cards in, ranked (server, tool) hits out.

``ToolIndex.build`` takes :class:`~cartograph.cards.verified.VerifiedCards`
(a mapping of server name to a card that already passed signature
verification) and never anything else, so unverified text cannot reach it;
tools that drifted upstream or are not covered by a card are passed in
``exclude`` and are not indexed at all. All per-tool work (embedding, lexical
indexing, server centroids) happens here, once; a query only pays for its own
embedding and a few vector products over the index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from cartograph import error_codes as codes
from cartograph.cards.verified import VerifiedCards
from cartograph.errors import RetrievalError
from cartograph.index.adapter import QueryAdapter
from cartograph.index.cache import EmbeddingCache
from cartograph.index.corpus import LARGE_CORPUS_TOOLS, Corpus, build_corpus
from cartograph.index.embedders.base import Embedder
from cartograph.index.entries import IndexEntry, ToolKey, entries_from_cards
from cartograph.index.incremental import entry_vectors, persisted_corpus
from cartograph.index.incremental import tool_vectors as tool_vectors
from cartograph.index.name_copies import SharedName, shared_names
from cartograph.index.open_world import OpenWorld, background_for
from cartograph.index.query import parse_query
from cartograph.index.rankers import QueryContext, Ranker, Ranking, get_ranker
from cartograph.index.vector_store import VectorStore

DEFAULT_METHOD: Final = "hybrid"
MAX_K: Final = 100
PREFILTER_MIN_TOOLS: Final = LARGE_CORPUS_TOOLS
"""From this many tools the hybrid scores densely only its prefiltered candidates
(:mod:`cartograph.index.rankers.hybrid`). Below it (every benchmark catalog, the
demo) ranking is exactly as without a prefilter."""

ProgressCallback = Callable[[int, int], None]


class Hit(BaseModel):
    """One ranked tool."""

    model_config = ConfigDict(frozen=True)

    server: str
    tool: str
    score: float


class ToolIndex:
    """Every ranker over one corpus of verified tools."""

    def __init__(
        self,
        corpus: Corpus,
        *,
        default_method: str = DEFAULT_METHOD,
        pooled_steps: bool = True,
        query_adapter: QueryAdapter | None = None,
    ) -> None:
        if query_adapter is not None:
            query_adapter.check(corpus.embedder)
        self.corpus = corpus
        # Off by default: the shipped one did not help zero-shot (index/adapter.py).
        self.query_adapter = query_adapter
        self.default_method = default_method
        # Pool step vectors from one model run over the whole task (faster, slightly
        # less accurate; see QueryContext). Off by default: quality first.
        self.pooled_steps = pooled_steps
        self._rankers: dict[str, Ranker] = {}
        # Tools never to answer (drifted, unattested, denied), checked on every
        # ranking whatever the corpus holds: a persisted corpus is not signed.
        self.exclude: frozenset[ToolKey] = frozenset()
        self.prefilter_min_tools: int | None = PREFILTER_MIN_TOOLS
        # Where the background catalog's vectors are cached (set by build).
        self.embedding_cache: EmbeddingCache | None = None
        self._open_world: OpenWorld | None = None
        self._shared: dict[ToolKey, SharedName] | None = None
        get_ranker(default_method)  # fail at build time, not at the first query

    @classmethod
    def build(
        cls,
        cards: VerifiedCards,
        embedder: Embedder,
        *,
        cache: EmbeddingCache | None = None,
        exclude: Iterable[ToolKey] = (),
        default_method: str = DEFAULT_METHOD,
        progress: ProgressCallback | None = None,
        pooled_steps: bool = True,
        store: VectorStore | None = None,
    ) -> ToolIndex:
        """Index every verified tool except ``exclude`` (drifted or unattested).

        Card text that reaches the index is re-checked against its verified
        digest first, so a card altered in memory after verification raises
        ``SignatureError`` here instead of reaching the index (P-SIG-3). With a
        ``store`` (the serving path), the whole corpus is loaded from its
        snapshot when the same verified cards were indexed before
        (:mod:`cartograph.index.snapshot`: no card is parsed, embedded or
        tokenised); otherwise it is built, each card's vectors from its
        persisted block (:mod:`cartograph.index.vector_store`), and saved.
        """
        if store is None:
            intact = {server: cards.ensure_intact(server) for server in cards}
            entries = entries_from_cards(intact, exclude=exclude)
            return cls.from_entries(
                entries,
                embedder,
                cache=cache,
                default_method=default_method,
                progress=progress,
                pooled_steps=pooled_steps,
            )
        skip = frozenset(exclude)
        corpus = persisted_corpus(cards, embedder, cache, store, skip, progress)
        index = cls(corpus, default_method=default_method, pooled_steps=pooled_steps)
        index.exclude = skip
        index.embedding_cache = cache
        return index

    @classmethod
    def from_entries(
        cls,
        entries: Sequence[IndexEntry],
        embedder: Embedder,
        *,
        cache: EmbeddingCache | None = None,
        default_method: str = DEFAULT_METHOD,
        progress: ProgressCallback | None = None,
        pooled_steps: bool = True,
    ) -> ToolIndex:
        """Index prepared entries. Serving code calls :meth:`build`; this is for eval."""
        vectors = entry_vectors(entries, embedder, cache, progress)
        corpus = build_corpus(entries, embedder, vectors)
        index = cls(corpus, default_method=default_method, pooled_steps=pooled_steps)
        index.embedding_cache = cache
        return index

    @property
    def size(self) -> int:
        return self.corpus.size

    def shared_names(self) -> dict[ToolKey, SharedName]:
        """Tools whose names other servers' tools share, and whether they rank by them.

        Computed once per index (:func:`~cartograph.index.name_copies.shared_names`).
        """
        if self._shared is None:
            corpus = self.corpus
            self._shared = shared_names(corpus.keys, corpus.lexical.name.scores)
        return self._shared

    def keys(self) -> list[ToolKey]:
        return self.corpus.keys

    def ranker(self, method: str | None = None) -> Ranker:
        name = method or self.default_method
        if name not in self._rankers:
            self._rankers[name] = get_ranker(name)
        return self._rankers[name]

    def prefilters(self) -> bool:
        """Whether the hybrid prefilters candidates at this index's size."""
        limit = self.prefilter_min_tools
        return limit is not None and self.size >= limit

    def open_world(self) -> OpenWorld:
        """The background catalog masked against this index (computed on first use).

        One product of ~1,000 background tasks with every tool, once per index;
        the background itself is embedded once per model id per process.
        """
        if self._open_world is None:
            background = background_for(self.corpus.embedder, self.embedding_cache)
            self._open_world = OpenWorld(background, self.corpus)
        return self._open_world

    def context(self, task: str) -> QueryContext:
        """Parse ``task`` once; several rankers may then share its embeddings."""
        return QueryContext(
            self.corpus,
            parse_query(task),
            pooled_steps=self.pooled_steps,
            adapter=self.query_adapter,
            prefilter_min_tools=self.prefilter_min_tools,
        )

    def rank(
        self,
        task: str | QueryContext,
        k: int,
        *,
        method: str | None = None,
        depth: int | None = None,
    ) -> Ranking:
        """(position, score) pairs, best first, ``depth`` (default ``k``) long."""
        if not 1 <= k <= MAX_K:
            raise RetrievalError(f"k must be between 1 and {MAX_K}, got {k}", code=codes.BAD_K)
        ctx = self.context(task) if isinstance(task, str) else task
        if self.size == 0:
            return []
        ranked = self.ranker(method).rank(ctx, max(depth or k, k), k=k)
        if self.exclude:
            ranked = [(i, s) for i, s in ranked if self.corpus.key(i) not in self.exclude]
        return ranked

    def search(self, task: str, k: int = 5, method: str | None = None) -> list[Hit]:
        """The top ``k`` tools for ``task`` by ``method`` (default: the index's)."""
        key = self.corpus.key
        return [
            Hit(server=key(i)[0], tool=key(i)[1], score=round(score, 6))
            for i, score in self.rank(task, k, method=method)
        ]
