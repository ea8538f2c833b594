"""Learning for one catalog: log what agents do, re-rank ``discover`` with it.

The proxy calls three things. ``for_principal(name).rerank`` runs inside
``discover`` (on whatever thread ranks), right after the zero-shot ranker,
with the evidence that principal may use (:mod:`.learner`). ``record_discover``
logs the task, its embedding, the tools shown and the principal, and opens
that MCP session's current task; ``record_call`` attributes each later
``call`` of the same session (within ``attribution_window`` seconds) to it,
logs the outcome, and — only when it succeeded — adds the evidence to the
in-memory :class:`~cartograph.learning.learner.Learner`. Each principal logs
at most ``max_evidence_per_minute`` rows (discovers and calls together) in this
catalog; a row past it is not logged, and a discover past it opens no task.
Store I/O runs in a worker thread (``anyio.to_thread``) and is awaited before
the proxy answers, so nothing is held only in memory when the agent sees the
result.

Evidence is keyed by the fingerprint of the tool's verified card entry:
:meth:`sync` (at start and whenever the index is rebuilt) drops the evidence
of any tool whose card entry changed or left its card.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import anyio
import numpy as np

from cartograph.cards.verified import VerifiedCards, fingerprint
from cartograph.config.model import LearningConfig
from cartograph.index.embedders.base import Embedder, Vectors
from cartograph.index.rankers.base import QueryContext, Ranking
from cartograph.index.tool_index import ToolIndex
from cartograph.learning.learner import Learner, LearningParams, blend, positions
from cartograph.learning.store import (
    LOCAL_PRINCIPAL,
    OK,
    CallRecord,
    Retention,
    SurfacedTool,
    TaskRecord,
    ToolKey,
    UsageStore,
)

logger = logging.getLogger(__name__)

RERANK_DEPTH: Final = 100
"""How many zero-shot results the blend sees (learning can also lift tools from beyond it)."""
MAX_SESSIONS: Final = 4096
PRUNE_EVERY: Final = 256
_RECENT_VECTORS: Final = 256
RATE_WINDOW: Final = 60.0
"""Seconds over which ``max_evidence_per_minute`` counts a principal's rows."""
MAX_RATED_PRINCIPALS: Final = 4096

Digests = Mapping[str, Mapping[str, str]]


@dataclass
class _OpenTask:
    task_id: int
    task: str
    vector: Vectors
    opened: float
    principal: str
    counted: set[ToolKey] = field(default_factory=set)
    full: bool = False
    """The task holds ``max_calls_per_task`` call rows: later calls are not logged."""


class CatalogLearning:
    """The usage log and learned ranking of one catalog (see module docstring)."""

    depth: int = RERANK_DEPTH

    def __init__(
        self,
        store: UsageStore,
        *,
        catalog: str,
        embedder: Embedder,
        config: LearningConfig,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.embedder = embedder
        self.config = config
        self.params = LearningParams.from_config(config)
        self._clock = clock
        self._lock = threading.Lock()
        self._learner = Learner(embedder.dim, self.params)
        self._digests: Digests = CardDigests(VerifiedCards())
        self._sessions: OrderedDict[str, _OpenTask] = OrderedDict()
        self._recent: OrderedDict[str, Vectors] = OrderedDict()
        self._positions: tuple[Callable[[], object], dict[ToolKey, int]] = (_gone, {})
        self._added = 0
        self._rate = _RateLimit(config.max_evidence_per_minute, RATE_WINDOW)
        self._loaded = False
        self._cards: Callable[[], object] = _gone

    @property
    def retention(self) -> Retention:
        return Retention(self.config.max_tasks, self.config.max_age_days)

    # -- lifecycle ---------------------------------------------------------------

    async def sync(self, cards: VerifiedCards) -> None:
        """Apply retention, drop evidence of changed cards, (re)load the learner when needed."""
        if self._loaded and self._cards() is cards:
            return  # same verified cards: same fingerprints (an index rebuild after drift)
        digests = await anyio.to_thread.run_sync(card_digests, cards)
        self._cards = weakref.ref(cards)
        if self._loaded and digests == self._digests:
            return
        await anyio.to_thread.run_sync(self._reload, digests)

    def _reload(self, digests: Digests) -> None:
        self.store.prune(self.retention, now=self._clock())
        dropped = self.store.drop_stale(self.catalog, digests)
        if dropped:
            logger.info("learning: dropped %d calls of tools whose card changed", dropped)
        evidence = self.store.evidence(
            self.catalog, self.embedder.model_id, limit=self.config.max_tasks
        )
        learner = Learner(self.embedder.dim, self.params)
        learner.load(e for e in evidence if e.vector.shape[0] == self.embedder.dim)
        with self._lock:
            self._learner, self._digests, self._loaded = learner, digests, True
            # An open task's counted tools may have lost their evidence: count again.
            for open_task in self._sessions.values():
                open_task.counted.clear()

    def close(self) -> None:
        self.store.close()

    # -- ranking -------------------------------------------------------------------

    def for_principal(self, principal: str = LOCAL_PRINCIPAL) -> PrincipalReranker:
        """The :class:`~cartograph.index.discover.Reranker` of ``principal``'s discovers."""
        return PrincipalReranker(self, principal)

    def rerank(
        self,
        index: ToolIndex,
        ctx: QueryContext,
        ranked: Ranking,
        k: int,
        principal: str = LOCAL_PRINCIPAL,
    ) -> Ranking:
        """Zero-shot + what ``principal`` may learn from (its own and agreed evidence), bounded."""
        vector = ctx.whole_vector()
        with self._lock:
            self._remember(ctx.query.text, vector)
            if not self._learner.tasks:
                return ranked
            learned = self._learner.scores(vector, ctx.query.text, principal)
            where = self._index_positions(index)
        by_position = {where[key]: bonus for key, bonus in learned.items() if key in where}
        p = self.params
        return blend(ranked, by_position, k, p.zero_shot_slots, p.first_place_margin)

    def _index_positions(self, index: ToolIndex) -> dict[ToolKey, int]:
        """Only tools this index holds (verified, servable, allowed) can be promoted."""
        # A weak reference, not id(): a rebuilt index may reuse a freed corpus's id.
        cached, where = self._positions
        if cached() is not index.corpus:
            where = positions(index.keys())
            self._positions = (weakref.ref(index.corpus), where)
        return where

    def _remember(self, task: str, vector: Vectors) -> None:
        self._recent[task] = vector
        self._recent.move_to_end(task)
        while len(self._recent) > _RECENT_VECTORS:
            self._recent.popitem(last=False)

    # -- recording -----------------------------------------------------------------

    async def record_discover(
        self,
        session: str,
        task: str,
        tools: Sequence[ToolKey],
        principal: str = LOCAL_PRINCIPAL,
    ) -> None:
        """Log one discover of ``principal``'s and make it the session's current task.

        Past the principal's rate the discover is not logged and the session
        has no current task (its calls are not logged either).
        """
        now = self._clock()
        with self._lock:
            if not self._rate.admit(principal, now):
                self._sessions.pop(session, None)
                return
            vector = self._recent.get(task)
        if vector is None:  # ranked without the reranker (or long ago): embed once more
            vector = await anyio.to_thread.run_sync(lambda: self.embedder.embed([task])[0])
        record = TaskRecord(
            catalog=self.catalog,
            session=session,
            task=task,
            model=self.embedder.model_id,
            vector=np.asarray(vector, dtype=np.float32),
            surfaced=tuple(SurfacedTool(s, t, self._digest(s, t)) for s, t in tools),
            created=now,
            principal=principal,
        )
        task_id = await anyio.to_thread.run_sync(self.store.add_task, record)
        with self._lock:
            self._sessions[session] = _OpenTask(task_id, task, record.vector, now, principal)
            self._sessions.move_to_end(session)
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
            self._added += 1
            prune = self._added % PRUNE_EVERY == 0
        if prune:
            await anyio.to_thread.run_sync(self._reload, self._digests)

    async def record_call(self, session: str, server: str, tool: str, outcome: str) -> None:
        """Log a call of the session's current task; a success becomes evidence."""
        now = self._clock()
        with self._lock:
            open_task = self._sessions.get(session)
            if open_task is None or now - open_task.opened > self.config.attribution_window:
                return  # no discover to attribute it to
            if open_task.full:
                return  # the per-task bound: neither logged nor counted
            if not self._rate.admit(open_task.principal, now):
                return  # the per-principal rate: neither logged nor counted
            digest = self._digest(server, tool)
        record = CallRecord(open_task.task_id, server, tool, digest, outcome, now)
        logged = await anyio.to_thread.run_sync(
            partial(self.store.add_call, record, max_calls=self.config.max_calls_per_task)
        )
        if not logged:  # full (or its task was forgotten): nothing more to log for it
            with self._lock:
                open_task.full = True
            return
        if outcome != OK or not digest:
            return
        with self._lock:
            key = (server, tool)
            if key not in open_task.counted:
                open_task.counted.add(key)
                self._learner.add(
                    open_task.task_id, open_task.vector, open_task.task, key, open_task.principal
                )

    def _digest(self, server: str, tool: str) -> str:
        return self._digests.get(server, {}).get(tool, "")

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {"catalog": self.catalog, "tasks_in_memory": self._learner.tasks}


class PrincipalReranker:
    """One principal's view of a catalog's learning: the reranker its discovers use."""

    def __init__(self, learning: CatalogLearning, principal: str) -> None:
        self.learning = learning
        self.principal = principal
        self.depth = learning.depth

    def rerank(self, index: ToolIndex, ctx: QueryContext, ranked: Ranking, k: int) -> Ranking:
        return self.learning.rerank(index, ctx, ranked, k, self.principal)


class _RateLimit:
    """At most ``limit`` admissions per principal in any ``window`` seconds (sliding)."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window
        self._times: OrderedDict[str, deque[float]] = OrderedDict()

    def admit(self, principal: str, now: float) -> bool:
        times = self._times.get(principal)
        if times is None:
            times = self._times[principal] = deque()
            while len(self._times) > MAX_RATED_PRINCIPALS:
                self._times.popitem(last=False)
        self._times.move_to_end(principal)
        while times and now - times[0] >= self.window:
            times.popleft()
        if len(times) >= self.limit:
            return False
        times.append(now)
        return True


def _gone() -> None:
    return None


def card_digests(cards: VerifiedCards) -> CardDigests:
    """server → tool → fingerprint of its verified card entry: the key of its evidence."""
    return CardDigests(cards)


class CardDigests(Mapping[str, Mapping[str, str]]):
    """:func:`card_digests`, computed per server on first look-up.

    Only servers with logged evidence or a call are ever looked up, so cards
    pinned by the manifest and never answered stay unparsed (at 100k tools,
    fingerprinting every tool at start-up parsed every card). Two of these
    are equal when their cards' verified body digests are: each tool's entry
    is part of its card's body.
    """

    def __init__(self, cards: VerifiedCards) -> None:
        self._cards = cards
        self._bodies = {server: cards.digest(server) for server in cards}
        self._tools: dict[str, dict[str, str]] = {}

    def __getitem__(self, server: str) -> Mapping[str, str]:
        if server not in self._tools:
            if server not in self._bodies:
                raise KeyError(server)
            tools = self._cards[server].body.tools
            self._tools[server] = {tool.name: fingerprint(tool) for tool in tools}
        return self._tools[server]

    def __iter__(self) -> Iterator[str]:
        return iter(self._bodies)

    def __len__(self) -> int:
        return len(self._bodies)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CardDigests):
            return self._bodies == other._bodies
        return super().__eq__(other)
