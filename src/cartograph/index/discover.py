"""``discover``: the top-k verified tools for a task, ready for an agent to call.

Each tool comes with what an agent needs to call it (the operator's
description, the input schema compacted losslessly, a usage example) and
where that text came from (card version, signing key, generator). Every card
is re-checked against its verified digest before its text is served (P-SIG-3).

**Abstention.** When nothing in the catalog fits the task, returning five
confident-looking tools invites a wrong call; discover then says so plainly and
returns only the closest few with a hint. Two signals decide, and either
suffices: the best raw cosine of the task (or a step) to any tool, which,
unlike the per-query normalised fused scores, means the same thing from query
to query, catches tasks nothing here comes near; the open-world margin
(:mod:`cartograph.index.open_world`: a tool of a broad background catalog fits
the task clearly better than every tool of ours) catches tasks that merely
share a word with one of our tools. The second applies to models with a
calibrated delta (the shipped MiniLM). Both parameters are fitted together on
the training sets only (``benchmarks/abstention_tradeoff.py``,
``docs/retrieval.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from pydantic import Field

from cartograph import error_codes as codes
from cartograph.cards.verified import VerifiedCards
from cartograph.errors import ArgumentError, RetrievalError
from cartograph.index.name_copies import SharedName
from cartograph.index.open_world import calibrated_delta
from cartograph.index.rankers.base import QueryContext, Ranking
from cartograph.index.schema_compact import compact_schema
from cartograph.index.tool_index import MAX_K as MAX_DEPTH
from cartograph.index.tool_index import ToolIndex
from cartograph.validation import StrictModel

DEFAULT_K: Final = 5
# Abstain when the best cosine of the task (or a step) to any tool is below this,
# whatever the model. Fitted on the training sets only, together with the shipped
# MiniLM's open-world delta (index/open_world.py): the pair that catches the most
# out-of-catalog training tasks while abstaining on at most 0.5 % of each
# answerable training set (benchmarks/abstention_tradeoff.py --max-false 0.005;
# docs/retrieval.md). It was 0.186, chosen on evaluation sets before the
# protocol; 0.33 before that, chosen on multi-step tasks alone, abstained on
# 1 in 5 single-step tasks.
DEFAULT_ABSTAIN_THRESHOLD: Final = 0.19
ABSTAIN_SHOWN: Final = 3
NAME_NOTE_SHOWN: Final = 3
"""Other servers' tools a name note lists; the rest are counted (``more``)."""
ABSTAIN_HINT: Final = (
    "No tool fits this task well. The closest tools are listed, but check them before "
    "calling. Rephrase the task as one concrete step (what to do to what), or run "
    "`cartograph status` to see servers that are down or tools hidden by drift."
)


class Reranker(Protocol):
    """A step after the ranker (learning from use): re-orders the best ``depth`` tools."""

    depth: int

    def rerank(self, index: ToolIndex, ctx: QueryContext, ranked: Ranking, k: int) -> Ranking:
        """``ranked`` (zero-shot, ``depth`` long) re-ordered; its first ``k`` are served."""
        ...


class ToolProvenance(StrictModel):
    card_version: int
    key_id: str
    generator: str
    generator_version: str
    verified: bool


class SharedNameNote(StrictModel):
    """Another server's tool has this tool's name (or a look-alike of it): P-NAME-3.

    The agent's warning that two tools answer to one name, read off the
    index as ``status`` reads it (:meth:`ToolIndex.shared_names`).
    ``ranked_by_name`` false: the index holds the tool without its name (a
    look-alike, or a copy of a name another server's tool backs, that the
    operator did not vouch for with ``vouch_name``).
    """

    also: list[str]
    """The other servers' tools of that name, as ``server/tool`` (the first
    :data:`NAME_NOTE_SHOWN`, sorted)."""
    ranked_by_name: bool
    more: int = Field(default=0, exclude_if=lambda n: n == 0)
    """How many more share it: a name copied onto fifty servers must not cost
    fifty entries on every reply that shows one of them."""


def _absent(value: object) -> bool:
    return value is None


class DiscoveredTool(StrictModel):
    server: str
    tool: str
    description: str
    input_schema: dict[str, Any]
    example: dict[str, Any]
    score: float
    provenance: ToolProvenance
    shared_name: SharedNameNote | None = Field(default=None, exclude_if=_absent)
    """Only on a tool whose name another server's tool also has; left out of
    every dump otherwise, so other tools' replies are unchanged."""


class DiscoverResult(StrictModel):
    """What ``discover`` returns: ranked tools, or an abstention with a hint.

    How an agent reads it (text and ``structuredContent``) is the server's
    business: :mod:`cartograph.server.discover_reply`.
    """

    task: str
    method: str
    tools: list[DiscoveredTool]
    abstained: bool = False
    confidence: float
    hint: str | None = None


def check_task_length(task: str, max_chars: int) -> None:
    """Refuse a task longer than ``max_chars`` before any work is spent on it (P-REL-10).

    Ranking cost grows faster than the task (5.5 s for 1 MB on the shipped
    model), and no real task needs more than a paragraph; the refusal names
    the limit and the config key that sets it.
    """
    if len(task) > max_chars:
        raise ArgumentError(
            f"the task is {len(task):,} characters; discover takes at most {max_chars:,} "
            "(index.max_task_chars). Describe the one step you need a tool for.",
            code=codes.TASK_TOO_LONG,
            length=len(task),
            limit=max_chars,
        )


def discover(
    index: ToolIndex,
    cards: VerifiedCards,
    task: str,
    k: int = DEFAULT_K,
    method: str | None = None,
    *,
    threshold: float | None = None,
    open_world_delta: float | None = None,
    reranker: Reranker | None = None,
) -> DiscoverResult:
    """The top ``k`` tools for ``task``, or an abstention when nothing fits.

    ``threshold`` forces the raw-cosine rule at that value, ``open_world_delta``
    the open-world rule; by default both apply (:func:`should_abstain`).
    """
    ctx = index.context(task)
    # Confidence first, so the rankers reuse its query × tool product; with the
    # prefilter (large indexes) after ranking, from the candidates' product.
    prefiltered = index.prefilters()
    confidence = task_confidence(ctx) if index.size and not prefiltered else 0.0
    if reranker is None:
        ranked = index.rank(ctx, k, method=method)
    else:
        depth = min(max(k, reranker.depth), MAX_DEPTH)
        ranked = reranker.rerank(index, ctx, index.rank(ctx, k, method=method, depth=depth), k)
        ranked = ranked[:k]
    if prefiltered:
        confidence = ctx.best_similarity()
    abstained = should_abstain(index, ctx, confidence, threshold, open_world_delta)
    shown = ranked[: min(k, ABSTAIN_SHOWN)] if abstained else ranked
    shared = index.shared_names()  # once per index; the serving path computes it at build
    tools = [_tool(cards, index.corpus.key(i), score, shared) for i, score in shown]
    return DiscoverResult(
        task=task,
        method=method or index.default_method,
        tools=tools,
        abstained=abstained,
        confidence=round(confidence, 4),
        hint=ABSTAIN_HINT if abstained else None,
    )


def should_abstain(
    index: ToolIndex,
    ctx: QueryContext,
    confidence: float,
    threshold: float | None = None,
    open_world_delta: float | None = None,
) -> bool:
    """Whether discover abstains.

    By default: the best cosine is below :data:`DEFAULT_ABSTAIN_THRESHOLD`, or,
    for a model with a calibrated delta, the open-world margin is below -delta
    (either suffices: each catches tasks the other misses). An explicit
    ``threshold`` applies the cosine rule alone, an explicit
    ``open_world_delta`` the open-world rule alone.
    """
    if threshold is not None:
        return confidence < threshold
    if open_world_delta is not None:
        return _outside(index, ctx, open_world_delta)
    if confidence < DEFAULT_ABSTAIN_THRESHOLD:
        return True
    delta = calibrated_delta(index.corpus.embedder.model_id)
    return delta is not None and _outside(index, ctx, delta)


def _outside(index: ToolIndex, ctx: QueryContext, delta: float) -> bool:
    """Some background tool fits the task better than every tool of ours by ``delta``."""
    if not index.size:
        return True
    ours = ctx.best_per_row()
    rows = ctx.vectors()[: len(ours)]
    return index.open_world().margin(rows, ours) < -delta


def task_confidence(ctx: QueryContext) -> float:
    """Best raw cosine of the task, or any of its steps, to any tool."""
    return ctx.best_similarity()


def _tool(
    cards: VerifiedCards,
    key: tuple[str, str],
    score: float,
    shared: Mapping[tuple[str, str], SharedName],
) -> DiscoveredTool:
    server, tool = key
    # From the server's reply table (pinned by the signed manifest, hash-checked
    # when first read) or else its card, re-checked against its verified
    # fingerprints first (P-SIG-3); either way no card is parsed per answer.
    reply = cards.reply(server, tool)
    if reply is None:  # the index was built from these cards; a mismatch is a bug
        raise RetrievalError(
            f"{server}/{tool} is indexed but not on its verified card; rebuild the index",
            code=codes.INDEX_STALE,
        )
    return DiscoveredTool(
        server=server,
        tool=tool,
        description=reply.description,
        input_schema=compact_schema(reply.input_schema, tool=tool),
        example=reply.example,
        score=round(score, 4),
        provenance=ToolProvenance(
            card_version=reply.card_version,
            key_id=cards.signer(server),
            generator=reply.generator,
            generator_version=reply.generator_version,
            verified=True,
        ),
        shared_name=_note(shared.get(key), shared),
    )


def _note(
    shared: SharedName | None, notes: Mapping[tuple[str, str], SharedName]
) -> SharedNameNote | None:
    """The agent's note; the tools that rank by the name (the originals) are named first."""
    if shared is None:
        return None
    first = sorted(shared.also, key=lambda k: (not _by_name(notes.get(k)), k))
    also = [f"{server}/{tool}" for server, tool in first]
    return SharedNameNote(
        also=also[:NAME_NOTE_SHOWN],
        ranked_by_name=shared.ranked_by_name,
        more=max(0, len(also) - NAME_NOTE_SHOWN),
    )


def _by_name(note: SharedName | None) -> bool:
    return note is not None and note.ranked_by_name
