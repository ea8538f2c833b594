"""What past use says about a new task, and how that re-orders the zero-shot ranking.

Two signals, both built only from tasks whose calls succeeded:

* **Votes from similar tasks.** The new task's vector is compared with every
  logged task's (one matrix-vector product); the ``neighbours`` most similar
  tasks above ``min_similarity`` vote for the tools that served them, each
  weighted by how far above the threshold it is. A tool's vote is its
  weighted share, damped when there is less than one unit of evidence, so one
  lukewarm neighbour cannot outvote the ranker.
* **A learned text field per tool**: the words of the tasks each tool served,
  scored with BM25 against the new task and scaled by how much of the task
  those words cover. It catches a recurring word (a product name, a file
  type) that the tool's card never mentions, without handing its full bonus
  to a tool that shares one everyday word ("time") with a new task.

**Whose evidence counts.** Every logged task belongs to the principal that
logged it, and each principal's evidence is scored on its own: its nearest
``neighbours`` near-repeats, its own text field. A principal's bonus for a tool
is its own, or — where at least ``min_principals`` distinct principals' evidence
gives the tool a bonus for this task — the ``min_principals``-th largest of
those bonuses: the strength that many principals vouch for. So one principal,
however many tasks it logs, moves only its own ranking; it cannot crowd another
principal's near-repeats out of the neighbours either, since each principal's
are chosen among its own.

:func:`blend` adds these to the zero-shot scores (scaled by the query's best)
and enforces the bounds that make learning safe to leave on: only tools the
index holds (verified, servable) can be promoted, the zero-shot ranker's best
``zero_shot_slots`` always stay in the top k, and a zero-shot first tool that
leads by ``first_place_margin`` keeps first place.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from cartograph.config.model import LearningConfig
from cartograph.index.embedders.base import Vectors
from cartograph.index.rankers.base import Ranking
from cartograph.index.text import tokenize
from cartograph.learning.store import LOCAL_PRINCIPAL, Evidence, ToolKey

_BM25_K1: Final = 1.2
_BM25_B: Final = 0.75


@dataclass(frozen=True)
class LearningParams:
    """The learned signals' weights and the bounds (defaults: :class:`LearningConfig`'s)."""

    neighbours: int = 10
    min_similarity: float = 0.8
    vote_weight: float = 1.0
    text_weight: float = 0.6
    zero_shot_slots: int = 2
    capacity: int = 10_000
    min_principals: int = 2
    first_place_margin: float | None = 0.1
    """None: no cap (replays that measure what the cap costs)."""

    @classmethod
    def from_config(cls, config: LearningConfig) -> LearningParams:
        return cls(
            neighbours=config.neighbours,
            min_similarity=config.min_similarity,
            vote_weight=config.vote_weight,
            text_weight=config.text_weight,
            zero_shot_slots=config.zero_shot_slots,
            capacity=config.max_tasks,
            min_principals=config.min_principals,
            first_place_margin=config.first_place_margin,
        )


class Learner:
    """Evidence of one catalog in memory: task vectors, the tools that served them, their words.

    Not thread-safe on its own; :class:`~cartograph.learning.catalog.CatalogLearning`
    holds a lock around it.
    """

    def __init__(self, dim: int, params: LearningParams | None = None) -> None:
        self.params = params or LearningParams()
        self.dim = dim
        self._vectors = np.zeros((min(64, self.params.capacity), dim), dtype=np.float32)
        self._owners = np.zeros(self._vectors.shape[0], dtype=np.int32)
        self._rows: list[_Row] = []
        self._row_of: dict[int, int] = {}
        self._principals: dict[str, int] = {}
        self._text: dict[int, _TextField] = {}

    @property
    def tasks(self) -> int:
        return len(self._rows)

    def load(self, evidence: Iterable[Evidence]) -> None:
        for item in evidence:
            for tool in item.tools:
                self.add(item.task_id, item.vector, item.task, tool, item.principal)

    def add(
        self,
        task_id: int,
        vector: Vectors,
        task: str,
        tool: ToolKey,
        principal: str = LOCAL_PRINCIPAL,
    ) -> bool:
        """Record that ``tool`` served ``principal``'s task ``task_id``; False if already known."""
        row = self._row_of.get(task_id)
        if row is None:
            row = self._append(task_id, vector, task, self._owner(principal))
        entry = self._rows[row]
        if tool in entry.tools:
            return False
        entry.tools.add(tool)
        self._text[entry.owner].add(tool, entry.tokens)
        return True

    def drop_tool(self, tool: ToolKey) -> None:
        """Forget everything ``tool`` earned (its card changed)."""
        for entry in self._rows:
            entry.tools.discard(tool)
        for field in self._text.values():
            field.drop(tool)

    def scores(
        self, vector: Vectors, task: str, principal: str = LOCAL_PRINCIPAL
    ) -> dict[ToolKey, float]:
        """Each tool's learned bonus for ``principal``'s new task (module docstring).

        Only tools that a near-repeat of the task voted for earn anything: the
        text field adds to their bonus but never reaches a tool on its own,
        since on tasks that do not repeat a shared word is not evidence.
        """
        if not self._rows:
            return {}
        tokens = tokenize(task)
        bonuses = {
            owner: self._bonus(owner, near, tokens) for owner, near in self._near(vector).items()
        }
        own = self._principals.get(principal, -1)
        return agreed(bonuses, own, self.params.min_principals)

    def _owner(self, principal: str) -> int:
        owner = self._principals.setdefault(principal, len(self._principals))
        self._text.setdefault(owner, _TextField())
        return owner

    def _near(self, vector: Vectors) -> dict[int, list[tuple[int, float]]]:
        """Each principal's ``neighbours`` nearest tasks above the threshold, with weights."""
        p = self.params
        n = len(self._rows)
        # einsum, not BLAS: a gemv over 10k rows took ~16 ms waking OpenBLAS's threads
        # on a busy two-core machine, ~2 ms single-threaded (as Corpus.tool_similarities).
        sims = np.einsum("td,d->t", self._vectors[:n], vector.astype(np.float32, copy=False))
        above = np.flatnonzero(sims > p.min_similarity)
        if not above.size:
            return {}
        owners = self._owners[above]
        order = np.lexsort((-sims[above], owners))  # by principal, then nearest first
        above, owners = above[order], owners[order]
        starts = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
        runs = np.diff(np.concatenate((starts, [above.size])))
        rank = np.arange(above.size) - np.repeat(starts, runs)
        span = max(1.0 - p.min_similarity, 1e-6)
        near: dict[int, list[tuple[int, float]]] = {}
        for row, owner in zip(above[rank < p.neighbours], owners[rank < p.neighbours], strict=True):
            weight = (float(sims[row]) - p.min_similarity) / span
            near.setdefault(int(owner), []).append((int(row), weight))
        return near

    def _bonus(
        self, owner: int, near: Sequence[tuple[int, float]], tokens: Sequence[str]
    ) -> dict[ToolKey, float]:
        """One principal's bonuses: its near-repeats' votes plus its own text field."""
        p = self.params
        votes: dict[ToolKey, float] = {}
        total = 0.0
        for row, weight in near:
            total += weight
            for tool in self._rows[row].tools:
                votes[tool] = votes.get(tool, 0.0) + weight
        # A share of the weighted evidence, damped below one unit of it.
        scale = max(total, 1.0)
        out = {tool: p.vote_weight * vote / scale for tool, vote in votes.items()}
        if p.text_weight > 0.0 and votes:
            for tool, score in self._text[owner].scores(tokens).items():
                if tool in votes:
                    out[tool] += p.text_weight * score
        return {tool: bonus for tool, bonus in out.items() if bonus > 0.0}

    def _append(self, task_id: int, vector: Vectors, task: str, owner: int) -> int:
        if len(self._rows) >= self.params.capacity:
            self._evict(max(1, self.params.capacity // 10))
        n = len(self._rows)
        if n == self._vectors.shape[0]:
            size = min(2 * n, self.params.capacity)
            grown = np.zeros((size, self.dim), dtype=np.float32)
            grown[:n] = self._vectors
            self._vectors = grown
            self._owners = np.concatenate((self._owners[:n], np.zeros(size - n, np.int32)))
        self._vectors[n] = vector
        self._owners[n] = owner
        self._rows.append(_Row(task_id, owner, set(), tuple(sorted(set(tokenize(task))))))
        self._row_of[task_id] = n
        return n

    def _evict(self, count: int) -> None:
        """Drop the ``count`` oldest tasks (the store's retention bounds the log the same way)."""
        for entry in self._rows[:count]:
            for tool in entry.tools:
                self._text[entry.owner].remove(tool, entry.tokens)
        self._rows = self._rows[count:]
        n = len(self._rows)
        self._vectors[:n] = self._vectors[count : count + n]
        self._owners[:n] = self._owners[count : count + n]
        self._row_of = {entry.task_id: i for i, entry in enumerate(self._rows)}


def agreed(
    bonuses: Mapping[int, Mapping[ToolKey, float]], own: int, min_principals: int
) -> dict[ToolKey, float]:
    """What one principal's ranking may use of every principal's bonuses.

    Its own bonus, or, for a tool at least ``min_principals`` principals give a
    bonus (its own counted among them), the ``min_principals``-th largest of
    theirs, whichever is more. One principal alone can never raise another's
    bonus above what ``min_principals - 1`` others vouch for too.
    """
    out = dict(bonuses.get(own, {}))
    support: dict[ToolKey, list[float]] = {}
    for by_tool in bonuses.values():
        for tool, bonus in by_tool.items():
            support.setdefault(tool, []).append(bonus)
    for tool, values in support.items():
        if len(values) >= min_principals:
            shared = sorted(values, reverse=True)[min_principals - 1]
            out[tool] = max(out.get(tool, 0.0), shared)
    return out


@dataclass
class _Row:
    task_id: int
    owner: int
    """The principal that logged it (:class:`Learner`'s number for its name)."""
    tools: set[ToolKey]
    tokens: tuple[str, ...]


class _TextField:
    """BM25 over one document per tool: the words of the tasks it served (incremental)."""

    def __init__(self) -> None:
        self._postings: dict[str, Counter[ToolKey]] = {}
        self._length: Counter[ToolKey] = Counter()

    def add(self, tool: ToolKey, tokens: Sequence[str]) -> None:
        for token in tokens:
            self._postings.setdefault(token, Counter())[tool] += 1
        self._length[tool] += len(tokens)

    def remove(self, tool: ToolKey, tokens: Sequence[str]) -> None:
        for token in tokens:
            posting = self._postings.get(token)
            if posting is None:
                continue
            posting[tool] -= 1
            if posting[tool] <= 0:
                del posting[tool]
            if not posting:
                del self._postings[token]
        self._length[tool] -= len(tokens)
        if self._length[tool] <= 0:
            del self._length[tool]

    def drop(self, tool: ToolKey) -> None:
        for token in [t for t, posting in self._postings.items() if tool in posting]:
            del self._postings[token][tool]
            if not self._postings[token]:
                del self._postings[token]
        self._length.pop(tool, None)

    def scores(self, tokens: Iterable[str]) -> dict[ToolKey, float]:
        """BM25 of the query against every tool's document, scaled to the best, times coverage.

        Coverage is the share of the query's IDF mass that the tool's document
        holds (a word no document has counts at the highest IDF): a tool that
        shares one everyday word with an eight-word task earns a small part of
        the bonus, not all of it, however far ahead of the other tools it is.
        """
        docs = len(self._length)
        if not docs:
            return {}
        average = sum(self._length.values()) / docs
        out: dict[ToolKey, float] = {}
        held: dict[ToolKey, float] = {}
        unseen = math.log(1.0 + (docs + 0.5) / 0.5)
        mass = 0.0
        for token in set(tokens):
            posting = self._postings.get(token)
            if not posting:
                mass += unseen
                continue
            idf = math.log(1.0 + (docs - len(posting) + 0.5) / (len(posting) + 0.5))
            mass += idf
            for tool, tf in posting.items():
                norm = _BM25_K1 * (1.0 - _BM25_B + _BM25_B * self._length[tool] / average)
                out[tool] = out.get(tool, 0.0) + idf * tf * (_BM25_K1 + 1.0) / (tf + norm)
                held[tool] = held.get(tool, 0.0) + idf
        best = max(out.values(), default=0.0)
        if best <= 0.0 or mass <= 0.0:
            return {}
        return {tool: (s / best) * (held[tool] / mass) for tool, s in out.items()}


def blend(
    ranked: Ranking,
    learned: Mapping[int, float],
    k: int,
    slots: int,
    first_place_margin: float | None = None,
) -> Ranking:
    """Zero-shot scores (scaled by the best) plus learned bonuses, under the bounds.

    ``learned`` is keyed by index position, so only tools the index holds
    (verified and servable) can appear. The zero-shot ranker's best
    ``min(slots, k)`` tools always stay in the first ``k``: when learning
    would push them out, they take the last places of the top k instead of
    the weakest promoted tools. When the zero-shot first tool leads the second
    by at least ``first_place_margin`` of its own score (``(best - second) /
    best``, see :func:`clear_lead`), no other tool's score may pass its: it
    stays first. With nothing learned the ranking is returned unchanged. The
    result is as long as ``ranked``.
    """
    if not learned or not ranked:
        return ranked
    best = ranked[0][1] if ranked[0][1] > 0.0 else 1.0
    combined = {pos: max(score, 0.0) / best for pos, score in ranked}
    for pos, bonus in learned.items():
        combined[pos] = combined.get(pos, 0.0) + bonus
    if first_place_margin is not None and clear_lead(ranked, first_place_margin):
        first = ranked[0][0]
        ceiling = combined[first]  # ties go to the zero-shot order: the first wins them
        combined = {p: min(score, ceiling) for p, score in combined.items()}
    zero_shot = {pos: i for i, (pos, _) in enumerate(ranked)}

    def key(p: int) -> tuple[float, int, int]:
        return (-combined[p], zero_shot.get(p, len(ranked)), p)

    reserved = [pos for pos, _ in ranked[: min(slots, k)]]
    kept = set(reserved)
    others = [p for p in sorted(combined, key=key) if p not in kept]
    free = k - len(reserved)
    head = sorted(reserved + others[:free], key=key)
    return [(p, combined[p]) for p in head + others[free:]][: len(ranked)]


def clear_lead(ranked: Ranking, margin: float) -> bool:
    """Whether the zero-shot first tool leads the second by ``margin`` of the best score.

    The lead is ``(best - second) / best``: 0 for a tie, 1 when the second
    scored nothing (or there is none). A best score of zero leads by nothing.
    """
    if not ranked or ranked[0][1] <= 0.0:
        return False
    best = ranked[0][1]
    second = max(ranked[1][1], 0.0) if len(ranked) > 1 else 0.0
    return (best - second) / best >= margin


def positions(keys: Sequence[ToolKey]) -> dict[ToolKey, int]:
    """Index position of every key: how learned scores become a ranking's positions."""
    return {key: i for i, key in enumerate(keys)}
