"""Names another server's tool also has: which of them rank without their name.

A tool's name is the one field its publisher chooses freely, and ranking
trusts it most. A hostile server that names a tool ``read_file`` beside the
real ``filesystem/read_file`` borrows everything that name earns: the
template card restates the name ("Read the file.", "show me the file", …), so
a copy whose card says nothing else is a short document made of the task's
own words, and it can outrank the tool it copies.

Two servers sharing a name is also common and honest (two git servers'
``git_status``, one server connected twice), so a collision alone is only a
finding (Rift reports it). What decides is what else the card says: a tool
is *backed* when its card describes it in words that are not its name, its
arguments' names or the template's restatement of the name — or when the
operator vouches for its name (``vouch_name``, signed into the card). In a
group of tools on different servers whose names are one name (equal after
normalisation, or sharing a look-alike skeleton), each member that is not
backed loses its name view when another server's member is backed: the name
is the backed tool's evidence, and the copy, whose card is nothing but that
name restated and its arguments' names, ranks by its server only. When no
member is backed, or all are, nobody can tell whose the name is, and nothing
changes. Look-alike spellings are already
:func:`~cartograph.index.entries.imitations` whatever their cards say.

The judgement is federation-wide: adding or removing a server can change
another server's entries, so the serving path re-indexes every server of a
group that a changed card touches rather than copying its rows
(:mod:`cartograph.index.incremental`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cartograph.index.text import tokenize
from cartograph.names import one_name_groups, split_identifier

ToolKey = tuple[str, str]


def colliding(keys: Iterable[ToolKey]) -> list[list[ToolKey]]:
    """Groups of two or more tools, on two or more servers, whose names are one name.

    One name: equal after :func:`~cartograph.names.normalise_name`, or the
    same :func:`~cartograph.names.skeleton` (linked transitively, as Rift
    groups its name findings). Each group and the list are sorted.
    """
    ordered = sorted(set(keys))
    groups = [[ordered[i] for i in g] for g in one_name_groups([tool for _, tool in ordered])]
    return sorted(g for g in groups if len({server for server, _ in g}) >= 2)


def name_copies(groups: Iterable[list[ToolKey]], backed: Callable[[ToolKey], bool]) -> set[ToolKey]:
    """The members of ``groups`` that rank without their name (see the module docstring)."""
    found: set[ToolKey] = set()
    for members in groups:
        backers = {key for key in members if backed(key)}
        for key in members:
            if key not in backers and any(other[0] != key[0] for other in backers):
                found.add(key)
    return found


def collision_notes(groups: Iterable[list[ToolKey]]) -> Mapping[ToolKey, tuple[ToolKey, ...]]:
    """Each member of ``groups`` and the other servers' tools its name collides with."""
    notes: dict[ToolKey, tuple[ToolKey, ...]] = {}
    for members in groups:
        for key in members:
            notes[key] = tuple(m for m in members if m[0] != key[0])
    return notes


@dataclass(frozen=True)
class SharedName:
    """What ``status`` and ``discover`` say of a tool whose name another server's tool also has."""

    also: tuple[ToolKey, ...]
    ranked_by_name: bool
    """False when the index holds it without its name (an imitation, a name
    copy, or a name that hides characters)."""

    def also_names(self) -> list[str]:
        """The other servers' tools as ``server/tool`` (how ``status`` and ``discover`` say it)."""
        return [f"{server}/{tool}" for server, tool in self.also]


def shared_names(
    keys: Sequence[ToolKey], name_scores: Callable[[Sequence[str]], npt.NDArray[np.float64]]
) -> dict[ToolKey, SharedName]:
    """Every indexed tool whose name collides with another server's, read off an index.

    ``keys`` are the index's tools in position order and ``name_scores`` its
    BM25 name field's scores for some words. No card is parsed: a tool kept
    its name view when its name's words score in its name field (an entry
    without its name has an empty one).
    """
    notes = collision_notes(colliding(keys))
    if not notes:
        return {}
    position = {key: i for i, key in enumerate(keys) if key in notes}
    out: dict[ToolKey, SharedName] = {}
    for key, also in sorted(notes.items()):
        words = tokenize(split_identifier(key[1]))
        kept = bool(words) and float(name_scores(words)[position[key]]) > 0.0
        out[key] = SharedName(also, kept)
    return out


__all__ = ["SharedName", "colliding", "collision_notes", "name_copies", "shared_names"]
