"""Layer 3: token diagnosis (paper eq. 13–14) and concrete separating words.

shared(C) is what makes the members look alike; distinct(t, C) is what only
``t`` says. An empty distinct set means the tool has no lexical signal of its
own: the diagnosis is REGENERATE.

Beyond the paper, each member of a HIGH or MEDIUM cluster gets a suggestion:
words that would separate it from the others. They come from facts the card
text should mention but no other member's text does — first the tool's own
name, then its argument names and allowed values — and otherwise from the
distinct words it already has, which then need to lead its description.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from cartograph.rift.model import Suggestion
from cartograph.rift.tokens import Vocabulary, token_key, words

MAX_SUGGESTED_WORDS: Final = 5
MAX_SHARED_SHOWN: Final = 4

_Source = Literal["name", "arguments", "card"]


@dataclass(frozen=True)
class MemberText:
    """What Layer 3 needs about one cluster member."""

    server: str
    tool: str
    tokens: frozenset[str]
    arguments: tuple[str, ...]
    """Argument names and allowed values, from the tool's schema."""

    @property
    def key(self) -> str:
        return f"{self.server}/{self.tool}"


def shared_tokens(members: Sequence[MemberText]) -> frozenset[str]:
    """shared(C) = ⋂ tok(t)."""
    return frozenset.intersection(*(m.tokens for m in members))


def distinct_tokens(members: Sequence[MemberText], index: int) -> frozenset[str]:
    """distinct(t, C) = tok(t) minus every other member's tokens."""
    others = _union(m.tokens for i, m in enumerate(members) if i != index)
    return members[index].tokens - others


def suggest(
    members: Sequence[MemberText], index: int, vocabulary: Vocabulary, nearest: str | None
) -> Suggestion:
    """Words that would separate ``members[index]`` from the rest of its cluster."""
    member = members[index]
    others = [m for i, m in enumerate(members) if i != index]
    taken = _union(m.tokens for m in others) | _union(_keys(_name_words(m.tool)) for m in others)
    taken |= _union(_keys(m.arguments) for m in others)
    rival = nearest or (others[0].key if others else "")
    shared = vocabulary.show(sorted(shared_tokens(members))[:MAX_SHARED_SHOWN])
    sources: tuple[tuple[_Source, Sequence[str]], ...] = (
        ("name", _name_words(member.tool)),
        ("arguments", member.arguments),
    )
    for source, candidates in sources:
        picked = _fresh(candidates, taken)
        if picked:
            return _make(member, picked, source, rival, shared)
    own = vocabulary.show(distinct_tokens(members, index))[:MAX_SUGGESTED_WORDS]
    if own:
        return _make(member, own, "card", rival, shared)
    return Suggestion(
        server=member.server,
        tool=member.tool,
        words=(),
        source="none",
        text=(
            f"REGENERATE {member.key}: nothing in its name or arguments differs from {rival}; "
            "describe what it does that the others do not, or merge the tools."
        ),
    )


def _make(
    member: MemberText,
    picked: tuple[str, ...],
    source: _Source,
    rival: str,
    shared: tuple[str, ...],
) -> Suggestion:
    said = ", ".join(f"'{w}'" for w in picked)
    common = ", ".join(f"'{w}'" for w in shared)
    where = {"name": "its name", "arguments": "its arguments", "card": "its own card text"}[source]
    text = f"{member.key}: lead with {said} (from {where}); no other member says it"
    text += f" — its text mostly repeats {common} that {rival} also uses." if common else "."
    return Suggestion(
        server=member.server,
        tool=member.tool,
        words=picked,
        source=source,
        text=text,
    )


def _fresh(candidates: Sequence[str], taken: frozenset[str]) -> tuple[str, ...]:
    """Candidate words, in order, that no other member uses (deduplicated)."""
    picked: list[str] = []
    seen: set[str] = set()
    for phrase in candidates:
        for word in words(phrase):
            key = token_key(word)
            if key not in taken and key not in seen:
                seen.add(key)
                picked.append(word)
    return tuple(picked[:MAX_SUGGESTED_WORDS])


def _name_words(tool: str) -> tuple[str, ...]:
    return tuple(words(tool))


def _keys(phrases: Sequence[str]) -> frozenset[str]:
    return frozenset(token_key(w) for p in phrases for w in words(p))


def _union(sets: Iterable[frozenset[str]]) -> frozenset[str]:
    out: set[str] = set()
    for one in sets:
        out |= one
    return frozenset(out)


__all__ = ["MemberText", "distinct_tokens", "shared_tokens", "suggest"]
