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

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from cartograph.rift.actions import action_of
from cartograph.rift.model import Suggestion
from cartograph.rift.queries import name_words
from cartograph.rift.tokens import Vocabulary, token_key, words

MAX_SUGGESTED_WORDS: Final = 5
MAX_SHARED_SHOWN: Final = 4

_Source = Literal["name", "arguments", "card", "none"]
_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class MemberText:
    """What Layer 3 needs about one cluster member."""

    server: str
    tool: str
    tokens: frozenset[str]
    arguments: tuple[str, ...]
    """Argument names and allowed values, from the tool's schema."""
    argument_names: tuple[str, ...] = ()
    """The schema's argument names alone."""
    upstream: str = ""
    """The upstream's name of a renamed tool: what its override table is keyed by."""

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
    members: Sequence[MemberText],
    index: int,
    vocabulary: Vocabulary,
    nearest: str | None,
    description: str = "",
) -> Suggestion:
    """What separates ``members[index]`` from its nearest rival, and the fix to paste.

    Names, argument sets and card text are each compared with the rival token by
    token; the advice names what differs (``'retrieve'`` vs ``'update'``) and
    says "nothing differs" only when all three are the same.
    """
    member = members[index]
    others = [m for i, m in enumerate(members) if i != index]
    rival = next((m for m in others if m.key == nearest), others[0] if others else member)
    diff = compare(member, rival, vocabulary)
    if _same_tool_elsewhere(member, rival):
        return _deny(member, rival, diff)
    sources: tuple[tuple[_Source, tuple[str, ...]], ...] = (
        ("name", diff.name_mine),
        ("arguments", diff.args_mine),
        ("card", diff.text_mine),
    )
    source, picked = next(((s, w) for s, w in sources if w), ("none", ()))
    if source == "none" and not diff.any:
        return Suggestion(
            server=member.server,
            tool=member.tool,
            words=(),
            source="none",
            kind="none",
            text=(
                f"REGENERATE {member.key}: its name, arguments and card text say nothing "
                f"{rival.key} does not — merge the two tools, or describe what it does that "
                "the other does not."
            ),
        )
    statement = distinguishing_statement(member, rival, diff)
    taken = _union(o.tokens for o in others)
    regenerate = not member.tokens - taken
    prefix = "REGENERATE " if regenerate else ""
    text = f"{prefix}{member.key} vs {rival.key}: {diff.describe(rival.tool)}"
    if statement:
        text += (
            f". Add to its card: “{statement}” — the override below goes in the file "
            "`[cards] overrides` names; `cartograph bootstrap` then re-signs the card"
        )
        if regenerate and not vocabulary.tokens(statement) - taken:
            text += (
                ". That separates it from its nearest rival only: every word of it also "
                "appears in another member's card, so to clear REGENERATE say what it "
                "returns or changes that none of them does"
            )
    return Suggestion(
        server=member.server,
        tool=member.tool,
        words=picked[:MAX_SUGGESTED_WORDS],
        source=source,
        kind="override" if statement else "none",
        text=text,
        fix=override_text(member, f"{statement} {description}".strip()) if statement else "",
    )


@dataclass(frozen=True)
class Difference:
    """Token-by-token difference between a member and one rival (words shown as written)."""

    name_mine: tuple[str, ...]
    name_theirs: tuple[str, ...]
    args_mine: tuple[str, ...]
    args_theirs: tuple[str, ...]
    text_mine: tuple[str, ...]
    text_theirs: tuple[str, ...]

    @property
    def any(self) -> bool:
        return any(
            (
                self.name_mine,
                self.name_theirs,
                self.args_mine,
                self.args_theirs,
                self.text_mine,
                self.text_theirs,
            )
        )

    def describe(self, rival: str) -> str:
        parts: list[str] = []
        if self.name_mine and self.name_theirs:
            parts.append(
                f"its name says {_q(self.name_mine)} where {rival} says {_q(self.name_theirs)}"
            )
        elif self.name_mine or self.name_theirs:
            side = "adds" if self.name_mine else "lacks"
            parts.append(f"its name {side} {_q(self.name_mine or self.name_theirs)}")
        if self.args_mine:
            parts.append(f"only it takes {_q(self.args_mine)}")
        if self.args_theirs:
            parts.append(f"only {rival} takes {_q(self.args_theirs)}")
        if not self.args_mine and not self.args_theirs:
            parts.append("same arguments")
        if self.text_mine:
            parts.append(f"its card text alone says {_q(self.text_mine[:MAX_SUGGESTED_WORDS])}")
        else:
            parts.append(f"its card text has no word {rival}'s lacks")
        return "; ".join(parts)


def compare(member: MemberText, rival: MemberText, vocabulary: Vocabulary) -> Difference:
    """Names, argument names and card-text tokens of ``member`` against ``rival``."""
    mine_name, their_name = words(member.tool), words(rival.tool)
    mine_args = [w for a in member.argument_names for w in words(a)]
    their_args = [w for a in rival.argument_names for w in words(a)]
    return Difference(
        name_mine=_minus(mine_name, their_name),
        name_theirs=_minus(their_name, mine_name),
        args_mine=_minus(mine_args, their_args),
        args_theirs=_minus(their_args, mine_args),
        text_mine=vocabulary.show(member.tokens - rival.tokens),
        text_theirs=vocabulary.show(rival.tokens - member.tokens),
    )


def distinguishing_statement(member: MemberText, rival: MemberText, diff: Difference) -> str:
    """One plain sentence a card can add so that it says what the rival's does not.

    It uses only the member's own facts (name words, then argument names the
    rival's name or schema lacks), so two rivals' statements never share the
    words that tell them apart; only when the member's name is a subset of the
    rival's does it say what the member is *not* for.
    """
    if diff.name_mine:
        return name_statement(member.tool)
    if diff.args_mine:
        return f"Takes {', '.join(diff.args_mine)}."
    if diff.name_theirs:
        return f"Not for {' '.join(diff.name_theirs)}: {rival.tool} does that."
    return ""


def name_statement(tool: str) -> str:
    """``API-retrieve-a-block`` → "Use it to retrieve a block." (from its first action verb)."""
    spoken = name_words(tool).split()
    start = next((k for k, w in enumerate(spoken) if action_of(w.lower()) is not None), None)
    if start is None:
        return f"Use it for {' '.join(spoken)}."
    return f"Use it to {' '.join(spoken[start:])}."


def override_text(member: MemberText, description: str) -> str:
    """A card override (``[cards] overrides`` file, TOML) replacing the tool's description."""
    tool = member.upstream or member.tool  # overrides name the upstream's tool
    table = f"[servers.{_toml_key(member.server)}.tools.{_toml_key(tool)}]"
    return f"{table}\ndescription = {json.dumps(description, ensure_ascii=False)}"


def _same_tool_elsewhere(member: MemberText, rival: MemberText) -> bool:
    """The same tool name on another server: keep both servers, hide one tool."""
    return member.server != rival.server and member.tool == rival.tool and member.key > rival.key


def _deny(member: MemberText, rival: MemberText, diff: Difference) -> Suggestion:
    fix = f'[[catalogs]]\nname = "default"\npolicy = {{ deny = [{json.dumps(member.key)}] }}'
    return Suggestion(
        server=member.server,
        tool=member.tool,
        words=(),
        source="none",
        kind="deny",
        text=(
            f"{member.key} and {rival.key} are the same operation on two servers "
            f"({diff.describe(rival.tool)}); if both servers stay, hide one from discovery "
            "with a deny rule (add the pattern to your catalog's policy if it has one)"
        ),
        fix=fix,
    )


def _q(items: Sequence[str]) -> str:
    return ", ".join(f"'{w}'" for w in items)


def _minus(mine: Sequence[str], theirs: Sequence[str]) -> tuple[str, ...]:
    """Words of ``mine`` (order kept, deduplicated) whose token key ``theirs`` lacks."""
    taken = {token_key(w) for w in theirs}
    out: list[str] = []
    for w in mine:
        if token_key(w) not in taken and w not in out:
            out.append(w)
    return tuple(out)


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _union(sets: Iterable[frozenset[str]]) -> frozenset[str]:
    out: set[str] = set()
    for one in sets:
        out |= one
    return frozenset(out)


__all__ = ["MemberText", "distinct_tokens", "shared_tokens", "suggest"]
