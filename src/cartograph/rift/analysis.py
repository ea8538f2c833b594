"""Rift end to end: cards → vectors → clusters → margins → diagnosis → report.

:func:`analyse` is the library entry point. It takes :class:`RiftTool`
records (built from *verified* cards by :func:`tools_from_cards`, so nothing
unattested is analysed) and an embedder, and returns a :class:`RiftReport`
that every renderer and the CI gate read.

Layer 2 follows eq. 11: margin(t, C) = min over the other members b of
cos(q, v_t) − cos(q, v_b), where q is t's probe on the first rung of its
ladder (:func:`~cartograph.rift.queries.probe_ladder`) that differs from b's.
With ``probe = "arguments"`` the ladder has one rung: the paper's exact form.
Identical card texts are embedded once and share one vector, so their margin
is exactly 0, not 0 ± rounding noise.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from cartograph.cards.canonical import canonical_digest
from cartograph.cards.model import Card
from cartograph.index.cache import EmbeddingCache
from cartograph.index.embedders.base import Embedder, Vectors
from cartograph.rift.actions import different_actions
from cartograph.rift.baselines import comparison_rows
from cartograph.rift.clustering import Groups, cluster, cohesion, components
from cartograph.rift.copies import Copyable, copy_pairs, copy_suggestion, published_key
from cartograph.rift.diagnosis import MemberText, distinct_tokens, shared_tokens, suggest
from cartograph.rift.duplicates import duplicate_servers
from cartograph.rift.layout import pca_2d
from cartograph.rift.model import (
    DEFAULT_PROBE,
    RISK_ORDER,
    Cluster,
    DuplicateServers,
    Member,
    Point,
    ProbeMode,
    RiftReport,
    RiftSettings,
    Risk,
    Suggestion,
    ToolRef,
)
from cartograph.rift.names import name_confusables
from cartograph.rift.queries import Probe, name_words, probe_key, probe_ladder
from cartograph.rift.tokens import Vocabulary

TextSource = Literal["description", "index"]
"""Which card text is embedded: the tool description alone (the paper's s(t)),
or exactly the text the dense index embeds (name + description + arguments)."""

EmbedFn = Callable[[Sequence[str]], Vectors]
"""Embeds texts; :func:`make_embed_fn` wraps an embedder and an optional cache."""


@dataclass(frozen=True)
class RiftTool:
    """One verified tool as Rift sees it."""

    server: str
    tool: str
    text: str
    probe: Probe
    arguments: tuple[str, ...] = ()
    fallbacks: tuple[Probe, ...] = ()
    """Further rungs of the probe ladder, used only against a rival that ties."""
    argument_names: tuple[str, ...] = ()
    schema: str = ""
    """Digest of the input schema: two servers with equal (name, schema) sets are one."""
    published: str = ""
    """What the publisher served (:func:`~cartograph.rift.copies.published_key`)."""
    upstream: str = ""
    """The upstream's name when a transform serves the tool as :attr:`tool` (overrides use it)."""

    @property
    def key(self) -> str:
        return f"{self.server}/{self.tool}"

    @property
    def ladder(self) -> tuple[Probe, ...]:
        return (self.probe, *self.fallbacks)


def tools_from_cards(
    cards: Mapping[str, Card],
    *,
    text: TextSource = "description",
    probe: ProbeMode = DEFAULT_PROBE,
) -> list[RiftTool]:
    """Rift's input from verified cards, sorted by (server, tool) for stable reports."""
    tools: list[RiftTool] = []
    for server in sorted(cards):
        for tool in sorted(cards[server].body.tools, key=lambda t: t.name):
            body = tool.description
            if text == "index":
                body = ". ".join(
                    p for p in (name_words(tool.name), tool.description, tool.arguments) if p
                )
            first, *rest = probe_ladder(server, tool.name, tool.input_schema, probe)
            tools.append(
                RiftTool(
                    server=server,
                    tool=tool.name,
                    text=body,
                    probe=first,
                    arguments=_argument_words(tool.input_schema),
                    fallbacks=tuple(rest),
                    argument_names=tuple(str(k) for k in _properties(tool.input_schema)),
                    schema=canonical_digest(dict(tool.input_schema)),
                    published=published_key(tool),
                    upstream=tool.upstream_name if tool.upstream_name != tool.name else "",
                )
            )
    return tools


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _argument_words(schema: Mapping[str, Any]) -> tuple[str, ...]:
    properties = _properties(schema)
    found: list[str] = []
    for name, spec in properties.items():
        found.append(name_words(str(name)))
        values = spec.get("enum") if isinstance(spec, Mapping) else None
        if isinstance(values, list):
            found.extend(str(v) for v in values[:8] if isinstance(v, str | int))
    return tuple(found)


@dataclass
class _Embedded:
    """Unique texts embedded once; ``row[i]`` is tool i's row in ``unique``."""

    unique: Vectors
    row: npt.NDArray[np.intp]

    @property
    def per_tool(self) -> Vectors:
        return self.unique[self.row]


def _embed_unique(embed: EmbedFn, texts: Sequence[str]) -> _Embedded:
    order: dict[str, int] = {}
    rows = np.asarray([order.setdefault(t, len(order)) for t in texts], dtype=np.intp)
    return _Embedded(unique=embed(list(order)), row=rows)


_Pair = Literal["confusable", "actions", "duplicate"]


@dataclass
class _Context:
    tools: Sequence[RiftTool]
    settings: RiftSettings
    texts: _Embedded
    vocabulary: Vocabulary
    token_sets: list[frozenset[str]]
    duplicates: tuple[DuplicateServers, ...] = ()
    copies: dict[int, set[int]] = field(default_factory=dict)
    """Each tool's name-only copies (:mod:`cartograph.rift.copies`), by index."""
    seconds: dict[str, float] = field(default_factory=dict)

    def copies_in(self, group: list[int], i: int) -> list[int]:
        return [j for j in group if j in self.copies.get(i, ())]

    def pair(self, a: int, b: int) -> _Pair:
        """How Layer 2 rates the pair (a, b) beyond the paper (see ``RiftSettings``)."""
        ta, tb = self.tools[a], self.tools[b]
        same = self.settings.duplicates and ta.tool == tb.tool
        if same and any({ta.server, tb.server} == set(d.servers) for d in self.duplicates):
            return "duplicate"
        if self.settings.actions and different_actions(ta.tool, tb.tool) is not None:
            return "actions"
        return "confusable"


def analyse(
    tools: Sequence[RiftTool], embed: EmbedFn, settings: RiftSettings, *, model_id: str
) -> RiftReport:
    """Run all three layers plus names, baselines and the map over ``tools``."""
    started = time.perf_counter()
    vocabulary = Vocabulary()
    ctx = _Context(
        tools=tools,
        settings=settings,
        texts=_embed_unique(embed, [t.text for t in tools]),
        vocabulary=vocabulary,
        token_sets=[vocabulary.tokens(t.text) for t in tools],
        duplicates=tuple(duplicate_servers(tools) if settings.duplicates else ()),
    )
    ctx.seconds["embed"] = time.perf_counter() - started
    mark = time.perf_counter()
    groups = cluster(ctx.texts.per_tool, settings.theta_sim, settings.linkage)
    groups += _copy_groups(ctx, groups)
    ctx.seconds["cluster"] = time.perf_counter() - mark
    mark = time.perf_counter()
    clusters = _rate_all(ctx, groups, embed)
    ctx.seconds["margins"] = time.perf_counter() - mark
    mark = time.perf_counter()
    comparison = comparison_rows(
        clusters,
        ctx.texts.per_tool,
        ctx.token_sets,
        [ToolRef(server=t.server, tool=t.tool) for t in tools],
        settings,
    )
    ctx.seconds["baselines"] = time.perf_counter() - mark
    names = name_confusables(ToolRef(server=t.server, tool=t.tool) for t in tools)
    points = _points(ctx, clusters)
    ctx.seconds["total"] = time.perf_counter() - started
    return RiftReport(
        settings=settings,
        model_id=model_id,
        servers=len({t.server for t in tools}),
        tools=len(tools),
        clusters=tuple(clusters),
        names=tuple(names),
        comparison=tuple(comparison),
        points=tuple(points),
        duplicates=ctx.duplicates,
        seconds={k: round(v, 3) for k, v in ctx.seconds.items()},
    )


def _copy_groups(ctx: _Context, groups: Groups) -> Groups:
    """Name-only copies (recorded on ``ctx``) that Layer 1 did not put in one cluster.

    Each such set of copies becomes a cluster of its own, beside the clusters
    its members already sit in: Playwright's ``hover`` stays confusable with
    Playwright's ``click`` (Layer 1) and is also one tool with Puppeteer's
    ``hover`` (this rule). Merging the copies into Layer 1 instead would pull
    them out of their siblings' clusters and hide those confusions.
    """
    if not ctx.settings.copies:
        return []
    tools = [Copyable(t.tool, t.text, t.published, t.argument_names) for t in ctx.tools]
    for a, b in copy_pairs(tools):
        ctx.copies.setdefault(a, set()).add(b)
        ctx.copies.setdefault(b, set()).add(a)
    together = components(len(tools), _pair_arrays(ctx.copies))
    return [g for g in together if not any(set(g) <= set(h) for h in groups)]


def _pair_arrays(links: Mapping[int, set[int]]) -> tuple[npt.NDArray[np.intp], ...]:
    pairs = [(a, b) for a, others in links.items() for b in others if a < b]
    rows = np.asarray([a for a, _ in pairs], dtype=np.intp)
    return rows, np.asarray([b for _, b in pairs], dtype=np.intp)


@dataclass
class _Probes:
    """Every probe Layer 2 needs, embedded once, scored against every card text.

    ``rung[(a, b)]`` is the ladder rung tool ``a``'s probe uses against rival
    ``b``; ``row[(a, rung)]`` is that probe's row in ``scores``.
    """

    rung: dict[tuple[int, int], int]
    row: dict[tuple[int, int], int]
    scores: npt.NDArray[np.float32]

    def score(self, tool: int, rung: int) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.scores[self.row[(tool, rung)]]
        return row


def _probe_all(ctx: _Context, groups: Groups, embed: EmbedFn) -> _Probes | None:
    if not ctx.settings.margin or not groups:
        return None
    rung = {
        (a, b): _rung(ctx.tools[a], ctx.tools[b]) for g in groups for a in g for b in g if a != b
    }
    needed = sorted({(a, 0) for g in groups for a in g} | {(a, r) for (a, _), r in rung.items()})
    embedded = _embed_unique(embed, [ctx.tools[a].ladder[r].text for a, r in needed])
    return _Probes(
        rung=rung,
        row={key: k for k, key in enumerate(needed)},
        scores=embedded.per_tool @ ctx.texts.unique.T,
    )


def _rung(a: RiftTool, b: RiftTool) -> int:
    """The first rung on which ``a``'s and ``b``'s probes are different tasks."""
    rungs = min(len(a.ladder), len(b.ladder))
    for k in range(rungs):
        if probe_key(a.ladder[k].text) != probe_key(b.ladder[k].text):
            return k
    return rungs - 1


def _rate_all(ctx: _Context, groups: Groups, embed: EmbedFn) -> list[Cluster]:
    probes = _probe_all(ctx, groups, embed)
    rated = [_rate(ctx, g, probes) for g in groups]
    rated.sort(key=lambda c: (RISK_ORDER[c.risk], _sort_margin(c), -c.size, c.members[0].key))
    return [c.model_copy(update={"id": k}) for k, c in enumerate(rated, start=1)]


def _sort_margin(c: Cluster) -> float:
    return c.margin_min if c.margin_min is not None else -c.cohesion


def _rate(ctx: _Context, group: list[int], probes: _Probes | None) -> Cluster:
    texts = [
        MemberText(
            server=ctx.tools[i].server,
            tool=ctx.tools[i].tool,
            tokens=ctx.token_sets[i],
            arguments=ctx.tools[i].arguments,
            argument_names=ctx.tools[i].argument_names,
            upstream=ctx.tools[i].upstream,
        )
        for i in group
    ]
    found = [None if probes is None else _margin(ctx, group, i, probes) for i in group]
    members = [_member(ctx, group, k, texts, found[k]) for k in range(len(group))]
    margins = [m.margin for m in members if m.margin is not None]
    margin_min = min(margins) if margins else None
    rated = [f for f in found if f is not None]
    duplicate = bool(rated) and all(f.only_duplicates for f in rated)
    risk = _risk(rated, ctx.settings) if probes is not None else "UNRATED"
    if risk != "UNRATED" and any(m.copies for m in members):
        risk = "HIGH"  # one tool under two names: only the names can separate them
    servers = tuple(sorted({ctx.tools[i].server for i in group}))
    # Every member of a risky cluster gets advice; elsewhere only REGENERATE members.
    advised = [k for k in range(len(group)) if risk in ("HIGH", "MEDIUM") or members[k].regenerate]
    suggestions = tuple(_advice(ctx, texts, members[k], k, group) for k in advised if not duplicate)
    return Cluster(
        id=0,
        risk=risk,
        scope="within-server" if len(servers) == 1 else "cross-server",
        servers=servers,
        cohesion=round(cohesion(ctx.texts.per_tool, group), 4),
        margin_min=margin_min,
        members=tuple(members),
        shared=ctx.vocabulary.show(shared_tokens(texts)),
        suggestions=suggestions,
        notes=tuple(_notes(ctx, group, members, probes, duplicate)),
        duplicate=duplicate,
    )


def _advice(
    ctx: _Context, texts: Sequence[MemberText], member: Member, k: int, group: list[int]
) -> Suggestion:
    text = ctx.tools[group[k]].text
    if member.copies:
        return copy_suggestion(texts[k], member.copies, text)
    return suggest(texts, k, ctx.vocabulary, member.nearest, text)


@dataclass(frozen=True)
class _Margin:
    value: float
    nearest: int
    rank: int
    reprobed: tuple[int, ...]
    confusable: float | None
    """Worst gap against rivals whose names state the same (or no) action."""
    separated: float | None
    """Worst gap against rivals whose names state a different action."""
    only_duplicates: bool
    identical: bool = False
    """A confusable rival has exactly this tool's card text: a coin flip for retrieval."""


def _margin(ctx: _Context, group: list[int], tool: int, probes: _Probes) -> _Margin:
    """Eq. 11 for ``tool``: its worst pairwise gap, each pair on its own rung."""
    card = ctx.texts.row
    terms: dict[_Pair, list[tuple[float, int]]] = {"confusable": [], "actions": [], "duplicate": []}
    for rival in (j for j in group if j != tool):
        row = probes.score(tool, probes.rung[(tool, rival)])
        # Same card text → same vector row → exactly 0.0, never rounding noise.
        gap = float(row[card[tool]]) - float(row[card[rival]])
        terms[ctx.pair(tool, rival)].append((gap, rival))
    rated = terms["confusable"] + terms["actions"]
    value, nearest = min(rated or terms["duplicate"])
    base = probes.score(tool, 0)
    return _Margin(
        value=round(value, 6),
        nearest=nearest,
        rank=1 + int(np.count_nonzero(base[card] > base[card[tool]])),
        reprobed=tuple(j for j in group if j != tool and probes.rung[(tool, j)] > 0),
        confusable=min(terms["confusable"])[0] if terms["confusable"] else None,
        separated=min(terms["actions"])[0] if terms["actions"] else None,
        only_duplicates=not rated,
        identical=any(card[rival] == card[tool] for _, rival in terms["confusable"]),
    )


def _member(
    ctx: _Context,
    group: list[int],
    k: int,
    texts: Sequence[MemberText],
    found: _Margin | None,
) -> Member:
    tool = ctx.tools[group[k]]
    # A twin on a duplicate server has the same text by construction: not a rival.
    twins = {j for j in range(len(group)) if j != k and ctx.pair(group[k], group[j]) == "duplicate"}
    rest = [t for j, t in enumerate(texts) if j not in twins]
    distinct = distinct_tokens(rest, rest.index(texts[k])) if len(rest) > 1 else texts[k].tokens
    copies = tuple(ctx.tools[j].key for j in ctx.copies_in(group, group[k]))
    return Member(
        server=tool.server,
        tool=tool.tool,
        query=tool.probe.text,
        margin=None if found is None else found.value,
        nearest=None if found is None else ctx.tools[found.nearest].key,
        rank=None if found is None else found.rank,
        reprobed=() if found is None else tuple(ctx.tools[j].key for j in found.reprobed),
        distinct=ctx.vocabulary.show(distinct),
        regenerate=not distinct or bool(copies),
        copies=copies,
    )


def _risk(found: Sequence[_Margin], settings: RiftSettings) -> Risk:
    """HIGH needs a confusable pair below ``high`` or with identical card text; a pair of
    different actions caps at MEDIUM."""
    confusable = [f.confusable for f in found if f.confusable is not None]
    every = confusable + [f.separated for f in found if f.separated is not None]
    if confusable and min(confusable) < settings.high:
        return "HIGH"
    if settings.identical and any(f.identical for f in found):
        return "HIGH"
    if every and min(every) < settings.medium:
        return "MEDIUM"
    return "LOW"


def _notes(
    ctx: _Context,
    group: list[int],
    members: Sequence[Member],
    probes: _Probes | None,
    duplicate: bool,
) -> list[str]:
    notes: list[str] = []
    if duplicate:
        servers = " and ".join(sorted({ctx.tools[i].server for i in group}))
        notes.append(
            f"the same tool on {servers}, one server connected twice: not rated; "
            "connect the server once (see the duplicate-server finding)"
        )
        return notes
    notes.extend(_action_notes(ctx, group))
    if len({ctx.tools[i].text for i in group}) == 1:
        notes.append(
            f"all {len(group)} members have identical card text: retrieval cannot tell them apart"
        )
    notes.extend(_copy_notes(ctx, members))
    for m in members:
        if m.margin is not None and m.margin < 0:
            notes.append(
                f"retrieval already picks the wrong tool: its own probe (built from {m.key}'s "
                f"arguments) ranks {m.nearest} above it (margin {m.margin:+.3f})"
            )
    if probes is not None:
        notes.extend(_tie_notes(ctx, group, probes))
    return notes


def _copy_notes(ctx: _Context, members: Sequence[Member]) -> list[str]:
    """One note per set of name-only copies: why the cluster is HIGH whatever its margins."""
    seen: set[frozenset[str]] = set()
    notes: list[str] = []
    for m in members:
        names = frozenset((m.key, *m.copies))
        if not m.copies or names in seen:
            continue
        seen.add(names)
        notes.append(
            f"{', '.join(sorted(names))} are one tool under {len(names)} names: the same "
            "publisher description and input schema, cards equal but for the names — HIGH "
            "whatever the margins, since only the names (which a publisher picks freely) "
            "could tell them apart"
        )
    return notes


def _action_notes(ctx: _Context, group: list[int]) -> list[str]:
    """One note naming the verbs of the pairs capped at MEDIUM because their actions differ."""
    verbs: list[str] = []
    pairs = 0
    for x, a in enumerate(group):
        for b in group[x + 1 :]:
            found = different_actions(ctx.tools[a].tool, ctx.tools[b].tool)
            if found is None or ctx.pair(a, b) != "actions" or b in ctx.copies.get(a, ()):
                continue
            pairs += 1
            verbs.extend(v for v in found if v not in verbs)
    if not pairs:
        return []
    said = ", ".join(f"'{v}'" for v in verbs)
    return [
        f"{pairs} pair(s) of members name different actions ({said}): a task that says what it "
        "wants done picks the right one, so those pairs count as MEDIUM at most"
    ]


_RUNG_WORDS: Final = ("", "their names", "their names and servers")


def _tie_notes(ctx: _Context, group: list[int], probes: _Probes) -> list[str]:
    """Say which members' arguments cannot tell them apart, and what Layer 2 did about it."""
    same_args: dict[tuple[str, ...], list[int]] = {}
    for i in group:
        same_args.setdefault(probe_key(ctx.tools[i].probe.text), []).append(i)
    notes: list[str] = []
    for tied in (t for t in same_args.values() if len(t) > 1):
        names = ", ".join(ctx.tools[i].key for i in tied)
        pairs = [(a, b) for a in tied for b in tied if a != b]
        rung = max(probes.rung[p] for p in pairs)
        still = any(_tied_on(ctx, a, b, probes.rung[(a, b)]) for a, b in pairs)
        if not still:
            notes.append(
                f"{names} take the same arguments; each pair was compared with probes "
                f"that add {_RUNG_WORDS[rung]}"
            )
        elif ctx.settings.probe == "arguments":
            notes.append(
                f"{names} take the same arguments, so the paper's argument-built probes are "
                "identical and one margin is necessarily ≤ 0; the default "
                "`--probe distinguishing` adds their names for such pairs"
            )
        else:
            notes.append(
                f"{names} get the same probe even with {_RUNG_WORDS[max(rung, 1)]}: one margin "
                "is necessarily ≤ 0 and only their cards can separate them"
            )
    return notes


def _tied_on(ctx: _Context, a: int, b: int, rung: int) -> bool:
    return probe_key(ctx.tools[a].ladder[rung].text) == probe_key(ctx.tools[b].ladder[rung].text)


def _points(ctx: _Context, clusters: Sequence[Cluster]) -> list[Point]:
    where: dict[str, Cluster] = {}
    for c in clusters:  # riskiest first: a copy in two clusters shows its copies' cluster
        for m in c.members:
            where.setdefault(m.key, c)
    coords = pca_2d(ctx.texts.per_tool)
    points: list[Point] = []
    for tool, (x, y) in zip(ctx.tools, coords.tolist(), strict=True):
        home = where.get(tool.key)
        points.append(
            Point(
                server=tool.server,
                tool=tool.tool,
                x=round(x, 5),
                y=round(y, 5),
                cluster=None if home is None else home.id,
                risk=None if home is None else home.risk,
            )
        )
    return points


def make_embed_fn(
    embedder: Embedder,
    *,
    cache: EmbeddingCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EmbedFn:
    """Embed through ``cache.embed_cached`` when a cache is given, else directly."""

    def embed(texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        if cache is not None:
            return cache.embed_cached(embedder, list(texts), progress=progress)
        return _embed_batched(embedder, texts, progress)

    return embed


def _embed_batched(
    embedder: Embedder, texts: Sequence[str], progress: Callable[[int, int], None] | None
) -> Vectors:
    batch = 64
    parts: list[Vectors] = []
    for start in range(0, len(texts), batch):
        parts.append(embedder.embed(texts[start : start + batch]))
        if progress is not None:
            progress(min(start + batch, len(texts)), len(texts))
    return np.concatenate(parts).astype(np.float32, copy=False)


__all__ = ["EmbedFn", "RiftTool", "TextSource", "analyse", "make_embed_fn", "tools_from_cards"]
