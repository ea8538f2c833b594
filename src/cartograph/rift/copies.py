"""Name-only copies: one tool under two names.

Two tools are *name-only copies* when their publisher gave them the same
description and the same input schema (the card's drift pins say so exactly)
and their cards do not separate them either: the card texts are equal once
the words of both names and of their (shared) argument names are taken out
(``words``, plurals folded; each name spelled as written and as the template
spells it, ``doc`` also ``document``), so "Fetch the document." and "Read the
document." — the template restating each name — count as equal, and so do
"Currency conversion." and "Convert the amount in currency conversion." (the
template fills a missing object from a required argument).

Retrieval then has nothing but the names to go on, and a name is the one
field a publisher chooses freely: a near-copy of a popular tool under a new
name, or siblings a publisher described with one sentence. Layer 2 cannot
see it — each member's probe carries its own name, so it wins its own probe
by a hair and the cluster looks MEDIUM — and the recalibration on observed
confusion cannot either, until some task happens to hit it. So a cluster
holding such a pair is HIGH and every copy is REGENERATE.

Left out on purpose:

* a tool with **no publisher description**: equal blank pins say nothing
  about two tools being described alike; the name is the only description
  the publisher gave (``list_issues`` / ``list_pulls`` on one server), and
  Layer 2 rates those pairs by their names;
* two tools with **the same name** (one server connected twice, or a
  same-name finding): the identical-text rule and the duplicate-server
  finding cover them.

The fix is a card override whose description says how the tool differs in
words that are not its name, or one of the tools denied; ``--regenerate``
cannot help, since its statements come from the names and arguments the
copies share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cartograph.cards.digest import BLANK_DESCRIPTION_PIN
from cartograph.cards.generators.text import readable_words
from cartograph.cards.model import ToolCard
from cartograph.rift.diagnosis import MemberText, override_text
from cartograph.rift.model import Suggestion
from cartograph.rift.queries import name_words
from cartograph.rift.tokens import token_key, words


@dataclass(frozen=True)
class Copyable:
    """What the rule reads of one tool: its name, its card text, and what it was made from."""

    tool: str
    text: str
    published: str
    """The publisher's description and input-schema pins, joined; empty when the
    description was blank (such a tool is never a copy)."""
    arguments: tuple[str, ...] = ()
    """Its input schema's argument names (equal for copies: their schemas are)."""


def published_key(card: ToolCard) -> str:
    """``Copyable.published`` for a card tool."""
    if card.pins.description == BLANK_DESCRIPTION_PIN:
        return ""
    return f"{card.pins.description}:{card.pins.input_schema}"


def _name_keys(name: str) -> frozenset[str]:
    spelled = " ".join([name_words(name), *readable_words(name)])
    return frozenset(token_key(w) for w in words(spelled))


def _without(text: str, masked: frozenset[str]) -> tuple[str, ...]:
    return tuple(k for k in (token_key(w) for w in words(text)) if k not in masked)


def name_only_copy(a: Copyable, b: Copyable) -> bool:
    """Whether ``a`` and ``b`` are one tool under two names (see the module docstring)."""
    if not a.published or a.published != b.published or a.tool == b.tool:
        return False
    masked = _name_keys(a.tool) | _name_keys(b.tool)
    for argument in a.arguments:
        masked |= _name_keys(argument)
    return _without(a.text, masked) == _without(b.text, masked)


def copy_pairs(tools: Sequence[Copyable]) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, of name-only copies among ``tools``.

    Only tools with one published key can be copies, so pairs are compared
    within those groups: linear in the catalog, not quadratic.
    """
    by_key: dict[str, list[int]] = {}
    for i, tool in enumerate(tools):
        if tool.published:
            by_key.setdefault(tool.published, []).append(i)
    return [
        (a, b)
        for group in by_key.values()
        for x, a in enumerate(group)
        for b in group[x + 1 :]
        if name_only_copy(tools[a], tools[b])
    ]


def copy_suggestion(member: MemberText, copies: Sequence[str], description: str) -> Suggestion:
    """REGENERATE advice for a name-only copy: say how it differs, in words that are not names.

    The override's placeholder names both tools, and names are taken out when
    copies are compared, so pasting it unedited into both cards clears nothing.
    """
    rival = copies[0].rsplit("/", 1)[-1]
    others = ", ".join(copies)
    placeholder = f"<say what {member.tool} does that {rival} does not>"
    return Suggestion(
        server=member.server,
        tool=member.tool,
        words=(),
        source="none",
        kind="override",
        text=(
            f"REGENERATE {member.key}: a name-only copy of {others} — the publisher gave them "
            "the same description and input schema, and their cards differ only by their "
            "names, which retrieval cannot trust to tell them apart. Give each a description "
            "that says how it differs (what it acts on, returns or needs that the other does "
            "not) in a card override, or hide one with a deny rule if they are the same "
            "operation"
        ),
        fix=override_text(member, f"{placeholder} {description}".strip()),
    )


__all__ = ["Copyable", "copy_pairs", "copy_suggestion", "name_only_copy", "published_key"]
