"""``discover``: the top-k verified tools for a task, ready for an agent to call.

Each tool comes with what an agent needs to call it (the operator's
description, the input schema compacted losslessly, a usage example) and
where that text came from (card version, signing key, generator). Every card
is re-checked against its verified digest before its text is served (P-SIG-3).

**Abstention.** When even the closest tool is far from the task, returning
five confident-looking tools invites a wrong call. The confidence signal is
the best raw cosine between the task (or any of its steps) and any tool
vector, which, unlike the per-query normalised fused scores, means the same
thing from query to query. Below the calibrated threshold discover says so
plainly and returns only the closest few with a hint.
:func:`cartograph.eval.calibrate.calibrate_on_sets` derives the threshold
from single-step, multi-step and out-of-catalog tasks together
(``benchmarks/calibrate_abstention.py``, ``docs/retrieval.md``).
"""

from __future__ import annotations

import re
from typing import Any, Final, Protocol

from pydantic import BaseModel, ConfigDict

from cartograph import error_codes as codes
from cartograph.cards.verified import VerifiedCards
from cartograph.errors import ArgumentError, RetrievalError
from cartograph.index.entries import plain_description
from cartograph.index.rankers.base import QueryContext, Ranking
from cartograph.index.schema_compact import compact_schema, schema_signature
from cartograph.index.text import tokenize
from cartograph.index.tool_index import MAX_K as MAX_DEPTH
from cartograph.index.tool_index import ToolIndex

DEFAULT_K: Final = 5
# The highest threshold that abstains on at most 2 % of each servable set (demo
# single-step, LiveMCPBench multi-step) with the shipped MiniLM and template
# cards; benchmarks/calibrate_abstention.py, docs/retrieval.md. It was 0.33,
# calibrated on multi-step tasks only, which abstained on 1 in 5 single-step tasks.
DEFAULT_ABSTAIN_THRESHOLD: Final = 0.186
ABSTAIN_SHOWN: Final = 3
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
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


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ToolProvenance(_Frozen):
    card_version: int
    key_id: str
    generator: str
    generator_version: str
    verified: bool


class DiscoveredTool(_Frozen):
    server: str
    tool: str
    description: str
    input_schema: dict[str, Any]
    example: dict[str, Any]
    score: float
    provenance: ToolProvenance


class DiscoverResult(_Frozen):
    """What ``discover`` returns: ranked tools, or an abstention with a hint."""

    task: str
    method: str
    tools: list[DiscoveredTool]
    abstained: bool = False
    confidence: float
    hint: str | None = None

    def to_text(self) -> str:
        """The agent's rendering: under half the tokens of the same tools' raw JSON.

        One line per tool, grouped under its server (servers in the order of
        their best tool): ``- tool(signature): gist``. The signature is
        lossless for arguments (names, ``*`` = required, types, enums,
        defaults, constraints, descriptions; ``schema_signature``); the gist is
        the description's first informative clause, without sentences that
        only restate names. Full descriptions and usage examples stay in
        :meth:`model_dump` (``cartograph discover --json``).
        """
        lines: list[str] = [self.hint] if self.abstained and self.hint else []
        for server, tools in _by_server(self.tools):
            lines.append(f"[{server}]")
            lines += [f"- {t.tool}({_signature(t.input_schema)}): {_gist(t)}" for t in tools]
        if not self.tools:
            lines.append("No tools are available.")
        return "\n".join(lines)

    def structured(self) -> dict[str, Any]:
        """What the proxy returns as ``structuredContent``: ids, scores, provenance.

        The agent reads :meth:`to_text`, which already carries every argument
        losslessly; repeating descriptions and schemas here would double the
        response. This is the machine-readable part a client needs to follow
        up (which server/tool, how sure, which signed card vouches for it).
        The full result stays available as :meth:`model_dump` (library, CLI
        ``--json``).
        """
        # Cards grouped by who signed them: one operator key usually signs every
        # card, and a 64-hex key id repeated per server would dominate the reply.
        signed: dict[tuple[str, str, bool], dict[str, int]] = {}
        for t in self.tools:
            p = t.provenance
            group = signed.setdefault(
                (p.key_id, f"{p.generator}/{p.generator_version}", p.verified), {}
            )
            group[t.server] = p.card_version
        cards = [
            {"key_id": key, "generator": gen, "verified": ok, "card_versions": versions}
            for (key, gen, ok), versions in signed.items()
        ]
        out: dict[str, Any] = {
            "tools": [{"server": t.server, "tool": t.tool, "score": t.score} for t in self.tools],
            "abstained": self.abstained,
            "confidence": self.confidence,
            "signed": cards,
        }
        if self.hint:
            out["hint"] = self.hint
        return out


def _by_server(tools: list[DiscoveredTool]) -> list[tuple[str, list[DiscoveredTool]]]:
    """Tools grouped under their server, servers in the order of their best tool."""
    groups: dict[str, list[DiscoveredTool]] = {}
    for t in tools:
        groups.setdefault(t.server, []).append(t)
    return list(groups.items())


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
    threshold: float = DEFAULT_ABSTAIN_THRESHOLD,
    reranker: Reranker | None = None,
) -> DiscoverResult:
    """The top ``k`` tools for ``task``, or an abstention when nothing fits."""
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
    abstained = confidence < threshold
    shown = ranked[: min(k, ABSTAIN_SHOWN)] if abstained else ranked
    tools = [_tool(cards, *index.corpus.key(i), score) for i, score in shown]
    return DiscoverResult(
        task=task,
        method=method or index.default_method,
        tools=tools,
        abstained=abstained,
        confidence=round(confidence, 4),
        hint=ABSTAIN_HINT if abstained else None,
    )


def task_confidence(ctx: QueryContext) -> float:
    """Best raw cosine of the task, or any of its steps, to any tool."""
    return ctx.best_similarity()


def _tool(cards: VerifiedCards, server: str, tool: str, score: float) -> DiscoveredTool:
    # What is served (the card's signature and header, and this tool) is
    # re-checked against its verified fingerprints first (P-SIG-3); the cost
    # grows with one tool, not with the card.
    tool_card = cards.ensure_tool_intact(server, tool)
    card = cards[server]
    if tool_card is None:  # the index was built from these cards; a mismatch is a bug
        raise RetrievalError(
            f"{server}/{tool} is indexed but not on its verified card; rebuild the index",
            code=codes.INDEX_STALE,
        )
    prov = card.body.provenance
    return DiscoveredTool(
        server=server,
        tool=tool,
        description=tool_card.description,
        input_schema=compact_schema(tool_card.input_schema, tool=tool),
        example=tool_card.example,
        score=round(score, 4),
        provenance=ToolProvenance(
            card_version=prov.card_version,
            key_id=cards.signer(server),
            generator=prov.generator,
            generator_version=prov.generator_version,
            verified=True,
        ),
    )


def _signature(schema: dict[str, Any]) -> str:
    return schema_signature(schema) if schema.get("properties") else ""


def _gist(tool: DiscoveredTool) -> str:
    """The description's first informative clause: enough to choose, far fewer tokens.

    The operator's full description stays in the structured result
    (:meth:`DiscoverResult.model_dump`, ``cartograph discover --json``).
    """
    return _informative(tool.description, tool.tool, tool.input_schema).split("; ")[0]


def _informative(description: str, tool: str, schema: dict[str, Any]) -> str:
    """Drop sentences whose words all come from the tool's or its arguments' names.

    The card template's structure sentences ("Needs path, content.", "Takes
    no inputs.") only restate the argument list printed beside them.
    """
    description = plain_description(description, "")
    known = set(tokenize(tool)) | {"input", "optional", "argument", "parameter"}
    for name in schema.get("properties") or {}:
        known.update(tokenize(str(name)))
    kept = [s for s in _SENTENCE.split(description) if s and not set(tokenize(s)) <= known]
    return " ".join(kept) if kept else description
