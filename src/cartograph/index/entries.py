"""What the index ranks: one entry per (server, tool), built from verified cards.

Only operator-attested text reaches an entry: the tool's name (its identity),
the card's tool description and argument summary, and the server's capability
summary and tags. The publisher's description never does (paper §3.2). A
separate constructor for *raw publisher text* exists only for the evaluation
baseline in :mod:`cartograph.eval.raw`; nothing that serves agents calls it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cartograph.cards.model import Card
from cartograph.index.text import split_identifier

ToolKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One rankable tool, split into the fields the rankers weight separately."""

    server: str
    tool: str
    name: str
    description: str
    arguments: str
    server_text: str

    @property
    def key(self) -> ToolKey:
        return (self.server, self.tool)

    @property
    def text(self) -> str:
        """The one string a dense model embeds for this tool."""
        parts = (self.name, self.description, self.arguments)
        return ". ".join(p for p in parts if p)


def entries_from_cards(
    cards: Mapping[str, Card], *, exclude: Iterable[ToolKey] = ()
) -> list[IndexEntry]:
    """Entries for every tool of every verified card, minus ``exclude`` (drifted/unattested).

    Servers and tools are sorted so that an index built from the same cards is
    the same index, whatever order the mapping yields them in.
    """
    skip = set(exclude)
    entries: list[IndexEntry] = []
    for server in sorted(cards):
        body = cards[server].body
        server_text = " ".join(
            p
            for p in (
                split_identifier(server),
                body.capability.summary,
                " ".join(body.capability.tags),
            )
            if p
        )
        for tool in sorted(body.tools, key=lambda t: t.name):
            if (server, tool.name) in skip:
                continue
            entries.append(
                IndexEntry(
                    server=server,
                    tool=tool.name,
                    name=split_identifier(tool.name),
                    description=tool.description,
                    arguments=tool.arguments,
                    server_text=server_text,
                )
            )
    return entries
