"""What the index ranks: one entry per (server, tool), built from verified cards.

Only operator-attested text reaches an entry: the tool's name (its identity),
the card's tool description and argument summary, its example tasks and
synonyms (the ``examples`` field), and the server's capability summary and
tags. The publisher's description never does (paper §3.2). A
separate constructor for *raw publisher text* exists only for the evaluation
baseline in :mod:`cartograph.eval.raw`; nothing that serves agents calls it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cartograph.cards.generators.phrasing import phrase_for
from cartograph.cards.generators.schema import properties, required
from cartograph.cards.generators.template import is_opaque, server_title
from cartograph.cards.generators.text import readable_words
from cartograph.cards.model import Card, ToolCard
from cartograph.index.name_copies import colliding, collision_notes, name_copies
from cartograph.index.text import tokenize
from cartograph.names import invisible_characters, normalise_name, skeleton, split_identifier

ToolKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One rankable tool, split into the fields the rankers weight separately.

    Lexical indexes read the fields as they are (the card's description
    repeats the tool's name, which acts as a name boost for BM25); the dense
    model reads :attr:`text`, which is the same facts without the card
    template's structure words.
    """

    server: str
    tool: str
    name: str
    description: str
    arguments: str
    server_text: str
    server_title: str = ""
    examples: str = ""
    """The card's example tasks and synonyms, one phrase per sentence: how agents ask."""

    @property
    def key(self) -> ToolKey:
        return (self.server, self.tool)

    @property
    def text(self) -> str:
        """The one string a dense model embeds for this tool.

        ``"<server>: <tool name>. <description>. <arguments>"``: the server's
        title says which product the action belongs to ("Office word: add
        paragraph" vs "PowerPoint: add slide"), which a sentence embedding
        cannot otherwise know; the template's structure words ("Needs …",
        "(optional)", a leading restatement of the name) are dropped because
        every card has them, so they only pull all vectors together.
        """
        parts = (
            self.name_text,
            plain_description(self.description, self.name),
            plain_arguments(self.arguments),
        )
        return ". ".join(p for p in parts if p)

    @property
    def name_text(self) -> str:
        """The tool's identity alone, ``"<server>: <tool name>"``: its second dense view.

        A task's step is often a short phrase ("save it as markdown") that
        matches what a tool *is* better than a long description of it; the
        tool's vector is the normalised sum of this view and :attr:`text`.
        """
        return f"{self.server_title}: {self.name}" if self.server_title else self.name


# Example values in argument descriptions: "(e.g., 'Asia/Tokyo')", "'json' or 'csv'".
_EXAMPLE_VALUES = re.compile(
    r"\((?:e\.g\.|eg\.|for example|for instance|such as|like|ex\.)[^)]*\)?"
    r"|(?<!\w)'[^'\s][^']*'(?!\w)|\"[^\"\s][^\"]*\"|`[^`]*`",
    re.IGNORECASE,
)


def without_example_values(arguments: str) -> str:
    """Argument text without the example values a publisher quotes in it.

    A value says what a tool *takes*, not what it is *for*: a task that
    names Tokyo should not pull ``convert_time`` ahead of ``get_current_time``
    because ``convert_time``'s argument description happens to use
    ``'Asia/Tokyo'`` as its example. Task literals are treated the same way
    on the query side (``index/query.py``). Measured on LiveMCPBench and the
    demo single-step set: no change beyond one query either way
    (``docs/retrieval.md``); the demo's "what time is it in Tokyo" now ranks
    ``get_current_time`` first.
    """
    return re.sub(r"\s{2,}", " ", _EXAMPLE_VALUES.sub(" ", arguments)).strip()


# Sentences the template generator writes into every card: structure, not meaning.
_STRUCTURE = re.compile(r"\s*(?:Needs [^.]*|Takes no inputs|Tool name: [^.]*)\.(?=\s|$)")
_OPTIONAL = re.compile(r"\s*\(optional\)|optional;\s*")
NO_ARGUMENTS = "no arguments"


def plain_description(description: str, name: str) -> str:
    """The description without template structure or a first sentence restating ``name``."""
    text = _STRUCTURE.sub("", description).strip()
    first, _, rest = text.partition(".")
    if first.strip().lower() == name.strip().lower():
        text = rest.strip()
    return text.rstrip(".")


def plain_arguments(arguments: str) -> str:
    """The argument summary without "(optional)" markers (they are on almost every argument)."""
    return "" if arguments == NO_ARGUMENTS else _OPTIONAL.sub("", arguments)


def _entry(
    server: str,
    tool: ToolCard,
    server_text: str,
    title: str,
    *,
    imitation: bool = False,
    copy: bool = False,
) -> IndexEntry:
    """One tool's entry; a tool whose name mixes writing systems is indexed by its server only.

    ``get_currеnt_time`` with a Cyrillic "е" is dressed as another tool: its card
    says so, and none of its own text (name, description, arguments, examples)
    may rank it as the tool it imitates. It stays listed, attested and callable.
    An ``imitation`` (:func:`imitations`) keeps its description but loses its
    name view: its name reads as another tool's, so it cannot rank by it (the
    caller leaves out one whose card the operator vouched for). A
    name ``copy`` (:mod:`cartograph.index.name_copies`) has a card that says
    nothing but its name and its arguments' names, and is indexed by its server
    only, as an opaque name is: kept alone, its arguments made a document so
    short that BM25's length normalisation ranked them above the original's
    (measured: "repeat my message unchanged" put a copied ``echo`` first).
    """
    opaque = is_opaque(tool.name)
    return IndexEntry(
        server=server,
        tool=tool.name,
        name="" if opaque or imitation or copy else split_identifier(tool.name),
        description="" if opaque or copy else tool.description,
        arguments="" if opaque or copy else without_example_values(tool.arguments),
        server_text=server_text,
        server_title=title,
        examples="" if opaque or copy else examples_text(tool.examples, tool.synonyms),
    )


def name_backed(tool: ToolCard, server: str = "") -> bool:
    """Whether ``tool``'s card says what it does in words other than its name (or is vouched).

    The words left out: the name's (as written and spelled out), its
    arguments' names, the template's structure sentences and its
    restatement of the name (the purpose sentence, from the same phrasing
    the generator used). What is left came from the publisher's own
    sentences or the operator's override.
    """
    if tool.vouched_name:
        return True
    names = [tool.name, *properties(tool.input_schema)]
    masked = {t for n in names for t in tokenize(" ".join([n, *readable_words(n)]))}
    needed = [str(n) for n in required(tool.input_schema)]
    masked.update(tokenize(phrase_for(tool.name, needed, [], server_title(server)).purpose))
    words = tokenize(_STRUCTURE.sub("", tool.description))
    return any(word not in masked for word in words)


def _plainness(name: str) -> int:
    """How far a name is from plain lower-case ASCII: the characters outside it."""
    plain = sum(1 for c in name if c.isascii() and (c.islower() or c.isdigit() or c in "_-./:"))
    return len(name) - plain + 10 * len(invisible_characters(name))


def imitations(keys: Iterable[ToolKey]) -> set[ToolKey]:
    """Tools whose names look like another tool's name without being it.

    Two names *look alike* when they share a :func:`~cartograph.names.skeleton`
    (Unicode's confusables, invisible characters dropped) and *are different*
    when their normalised forms differ (``get_file`` / ``getFile`` are one
    name; ``get_file`` / ``get_fiIe`` are two that read as one). In each such
    group the plainest spelling (closest to lower-case ASCII) is taken for the
    original; the others are imitations. Where the plainest is a tie between
    different names, nobody can tell, and every name of the group is.
    """
    groups: dict[str, list[ToolKey]] = {}
    for key in keys:
        groups.setdefault(skeleton(key[1]), []).append(key)
    found: set[ToolKey] = set()
    for members in groups.values():
        if len({normalise_name(tool) for _, tool in members}) < 2:
            continue
        best = min(_plainness(tool) for _, tool in members)
        originals = {normalise_name(tool) for _, tool in members if _plainness(tool) == best}
        if len(originals) > 1:
            found.update(members)
        else:
            found.update(k for k in members if normalise_name(k[1]) not in originals)
    return found


def examples_text(examples: Iterable[str], synonyms: Iterable[str] = ()) -> str:
    """The examples field: every word of the tasks and synonyms, each once, in order.

    Example tasks restate the tool's object in every task ("read the graph",
    "show me the graph", …); indexed as written, that repetition would weigh
    the name's words several times over. Each word once keeps what the
    examples add — the other words people use for the action — without it.
    """
    seen: dict[str, None] = {}
    for phrase in (*examples, *synonyms):
        for word in phrase.lower().replace(".", " ").split():
            seen.setdefault(word, None)
    return " ".join(seen)


def _title(card: Card) -> str:
    """The server's title as entries carry it: the capability summary's first sentence."""
    return card.body.capability.summary.split(". ", 1)[0].rstrip(".")


def copies_among(
    cards: Mapping[str, Card], groups: Iterable[list[ToolKey]], imitating: set[ToolKey]
) -> set[ToolKey]:
    """:func:`~cartograph.index.name_copies.name_copies` judged on ``cards``.

    ``cards`` must hold every server with a member in ``groups``. An
    imitation backs no name (its own is a look-alike of another's) unless the
    operator vouches for it.
    """

    def backed(key: ToolKey) -> bool:
        tool = cards[key[0]].tool(key[1])
        if tool is None or (key in imitating and not tool.vouched_name):
            return False
        return name_backed(tool, key[0])

    return name_copies(groups, backed)


@dataclass(frozen=True)
class NameNote:
    """Cartograph's note on one tool whose name another server's tool also has."""

    key: ToolKey
    also: tuple[ToolKey, ...]
    """The other servers' tools of the same (or a look-alike) name."""
    ranked_by_name: bool
    """False for an imitation or a name copy: it ranks without its name."""
    vouched: bool

    def line(self) -> str:
        """The note as one line, for the card's reader."""
        others = ", ".join(f"{server}/{tool}" for server, tool in self.also)
        if self.vouched:
            how = "the operator vouches for it (vouch_name)"
        elif self.ranked_by_name:
            how = "its card describes it in other words, so it still ranks by it"
        else:
            how = "it ranks without its name until the operator vouches for it (vouch_name)"
        return f"Also the name of {others}: {how}."


def name_notes(cards: Mapping[str, Card]) -> dict[ToolKey, NameNote]:
    """Every tool of ``cards`` whose name collides with another server's, and how it ranks."""
    keys = [(server, tool.name) for server in cards for tool in cards[server].body.tools]
    groups = colliding(keys)
    imitating = imitations(keys)
    copies = copies_among(cards, groups, imitating)
    notes: dict[ToolKey, NameNote] = {}
    for key, also in collision_notes(groups).items():
        tool = cards[key[0]].tool(key[1])
        vouched = tool is not None and tool.vouched_name
        unnamed = key in copies or (key in imitating and not vouched)
        notes[key] = NameNote(key, also, not unnamed, vouched)
    return notes


def entries_from_cards(
    cards: Mapping[str, Card],
    *,
    exclude: Iterable[ToolKey] = (),
    imitating: set[ToolKey] | None = None,
    copies: set[ToolKey] | None = None,
) -> list[IndexEntry]:
    """Entries for every tool of every verified card, minus ``exclude`` (drifted/unattested).

    Servers and tools are sorted so that an index built from the same cards is
    the same index, whatever order the mapping yields them in. Without
    ``imitating`` and ``copies`` the whole federation is taken to be here, and
    look-alikes and name copies are found among it.
    """
    skip = set(exclude)
    keys = [(server, tool.name) for server in cards for tool in cards[server].body.tools]
    if imitating is None:
        imitating = imitations(keys)
    if copies is None:
        copies = copies_among(cards, colliding(keys), imitating)
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
            key = (server, tool.name)
            entries.append(
                _entry(
                    server,
                    tool,
                    server_text,
                    _title(cards[server]),
                    imitation=key in imitating and not tool.vouched_name,
                    copy=key in copies,
                )
            )
    return entries
