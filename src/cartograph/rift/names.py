"""Name-level findings: tool names a model (or a person) can mix up, or cannot see whole.

Embeddings see card text, but agents also see and type tool *names*. Four
kinds of finding are reported:

* ``invisible`` — a name holding characters a reader cannot see (format
  characters such as a zero-width space, bidi controls): one finding per
  tool, whether or not another name collides with it;
* ``same-name`` — the identical name on different servers;
* ``normalised`` — equal after Unicode NFKC, case-folding and removing
  separators (``send_email`` / ``sendEmail`` / ``send-email``);
* ``lookalike`` — equal only in what they look like: the shared UTS #39
  skeleton, :func:`cartograph.names.skeleton` (Unicode's confusables table, so
  Cyrillic ``а`` / Latin ``a``, ``I`` / ``l``, ``rn`` / ``m``; invisible
  characters dropped; and the few pairs the table lacks, ``0`` / ``o`` and
  ``vv`` / ``w``, from :data:`cartograph.names.SKELETON_SUPPLEMENT`). The
  index judges imitations with the same skeleton, so Rift and ranking never
  disagree on which names look alike.

:func:`with_nameless` marks, in each group, the members the index ranks without
their name (look-alike spellings, and copies of a name another server's tool
backs: :mod:`cartograph.index.name_copies`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Literal

from cartograph.cards.model import Card
from cartograph.index.entries import name_notes
from cartograph.names import invisible_characters, normalise_name, one_name_groups
from cartograph.rift.model import NameConfusable, ToolRef

_SEVERITY: dict[str, int] = {"invisible": 0, "lookalike": 1, "normalised": 2, "same-name": 3}


def name_confusables(tools: Iterable[ToolRef]) -> list[NameConfusable]:
    """Every name finding: hidden characters, and groups of two or more names that collide.

    Most severe first.
    """
    refs = sorted(set(tools), key=lambda r: (r.tool, r.server))
    groups = one_name_groups([ref.tool for ref in refs])
    found = [_describe([refs[i] for i in members]) for members in groups]
    found += [_hidden(ref) for ref in refs if invisible_characters(ref.tool)]
    return sorted(
        found, key=lambda c: (_SEVERITY[c.kind], c.scope != "within-server", c.key, c.members)
    )


def with_nameless(
    found: Iterable[NameConfusable], cards: Mapping[str, Card]
) -> list[NameConfusable]:
    """``found`` with each finding's members that rank without their name marked.

    Judged on the whole of ``cards`` as the index judges them
    (:func:`cartograph.index.entries.name_notes`), so the report and ranking agree.
    """
    notes = name_notes(cards)
    out = []
    for finding in found:
        nameless = tuple(
            m
            for m in finding.members
            if (m.server, m.tool) in notes and not notes[(m.server, m.tool)].ranked_by_name
        )
        out.append(finding.model_copy(update={"nameless": nameless}) if nameless else finding)
    return out


def shown(name: str) -> str:
    """``name`` with each invisible character written as its code point: ``read<U+200B>file``."""
    hidden = set(invisible_characters(name))
    return "".join(f"<U+{ord(c):04X}>" if c in hidden else c for c in name)


def _hidden(ref: ToolRef) -> NameConfusable:
    characters = ", ".join(
        f"U+{ord(c):04X} {unicodedata.name(c, 'format character')}"
        for c in dict.fromkeys(invisible_characters(ref.tool))
    )
    return NameConfusable(
        kind="invisible",
        scope="within-server",
        key=f"{shown(ref.tool)} ({characters})",
        members=(ref,),
    )


def _describe(members: list[ToolRef]) -> NameConfusable:
    names = {m.tool for m in members}
    kind: Literal["same-name", "normalised", "lookalike"]
    servers = {m.server for m in members}
    if len(names) == 1:
        kind = "same-name"
    elif len({normalise_name(n) for n in names}) == 1:
        kind = "normalised"
    else:
        kind = "lookalike"
    # A group is within-server when some server holds two of its names.
    within = len(servers) < len(members)
    return NameConfusable(
        kind=kind,
        scope="within-server" if within else "cross-server",
        key=shown(normalise_name(members[0].tool)),
        members=tuple(members),
    )


__all__ = ["name_confusables", "shown", "with_nameless"]
