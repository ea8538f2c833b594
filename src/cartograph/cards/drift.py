"""Drift (rug pulls): does what an upstream serves still match its signed card?

Run on every connect and reconnect, on ``notifications/tools/list_changed``,
and on a schedule (the re-list interval). Each (server, tool) gets one
:class:`ToolDrift`:

- ``ok``: the served definition's digest equals the card's pin;
- ``drifted``: the digest differs; ``changed`` says which parts
  (description / schema / output_schema / annotations / title);
- ``unattested``: served upstream but no verified card covers it (P-CARD-4);
- ``missing``: in the card but no longer served.

Pins are looked up by (server, tool) only, so a definition swapped between
two tools, or moved to another server, never matches a pin (P-CARD-3). A tool
the card serves under another name (a transform) is found by its upstream
name and reported under its served name, the one ``discover`` and ``call`` use.

A running proxy keeps exactly one :class:`DriftView`: every path that learns
what a server lists writes into it, and ``discover``, ``call`` and ``status``
all read it, so a tool found changed is hidden, refused and reported at once
(P-DRIFT-1) — there is no second copy that a path could forget to update.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cartograph import error_codes as codes
from cartograph.cards.digest import tool_digest, tool_pins
from cartograph.cards.model import Card, Pins, ToolCard
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.errors import DriftError

DriftStatus = Literal["ok", "drifted", "unattested", "missing"]
_PARTS: Final = (
    ("description", "description"),
    ("input_schema", "schema"),
    ("output_schema", "output_schema"),
    ("annotations", "annotations"),
    ("title", "title"),
)


def reattest_command(server: str) -> str:
    return f"cartograph bootstrap --server {server}"


@dataclass(frozen=True)
class ToolDrift:
    server: str
    tool: str
    status: DriftStatus
    changed: tuple[str, ...] = ()

    @property
    def exposed(self) -> bool:
        """Only ``ok`` tools reach ``discover`` and ``call``."""
        return self.status == "ok"

    def error(self) -> DriftError:
        """The refusal for a call to this tool; names server, tool, change and the fix."""
        fix = reattest_command(self.server)
        if self.status == "drifted":
            what = ", ".join(self.changed) or "definition"
            message = (
                f"tool {self.tool!r} on server {self.server!r} drifted since attestation "
                f"({what} changed); review the change with `cartograph cards diff`, "
                f"then re-attest with `{fix}`"
            )
            code = codes.TOOL_DRIFTED
        elif self.status == "unattested":
            message = (
                f"tool {self.tool!r} on server {self.server!r} is not covered by a signed "
                f"card; attest it with `{fix}`"
            )
            code = codes.TOOL_UNATTESTED
        else:
            message = (
                f"tool {self.tool!r} is in {self.server!r}'s card but the server no longer "
                f"serves it; re-attest with `{fix}`"
            )
            code = codes.TOOL_MISSING
        return DriftError(
            message,
            code=code,
            server=self.server,
            tool=self.tool,
            changed=list(self.changed),
            command=fix,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "status": self.status,
            "changed": list(self.changed),
        }


@dataclass(frozen=True)
class DriftReport:
    entries: tuple[ToolDrift, ...] = ()
    _by_key: dict[tuple[str, str], ToolDrift] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self._by_key.update({(e.server, e.tool): e for e in self.entries})

    def __iter__(self) -> Iterator[ToolDrift]:
        return iter(self.entries)

    def get(self, server: str, tool: str) -> ToolDrift | None:
        return self._by_key.get((server, tool))

    def check(self, server: str, tool: str) -> None:
        """Raise the :class:`DriftError` for a tool that must not be served."""
        entry = self.get(server, tool)
        if entry is None:
            entry = ToolDrift(server, tool, "unattested")
        if not entry.exposed:
            raise entry.error()

    @property
    def clean(self) -> bool:
        return all(e.status == "ok" for e in self.entries)

    def with_status(self, *statuses: DriftStatus) -> list[ToolDrift]:
        return [e for e in self.entries if e.status in statuses]

    @property
    def blocked(self) -> frozenset[tuple[str, str]]:
        """(server, tool) pairs to hide from discover and refuse in call."""
        return frozenset(
            (e.server, e.tool) for e in self.entries if e.status in ("drifted", "unattested")
        )

    @property
    def exposed(self) -> frozenset[tuple[str, str]]:
        return frozenset((e.server, e.tool) for e in self.entries if e.exposed)

    def for_server(self, server: str) -> list[ToolDrift]:
        return [e for e in self.entries if e.server == server]

    def merged(self, other: DriftReport) -> DriftReport:
        """This report with ``other``'s servers replaced (e.g. after one list_changed)."""
        servers = {e.server for e in other.entries}
        kept = tuple(e for e in self.entries if e.server not in servers)
        return DriftReport(kept + other.entries)

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for entry in self.entries:
            counts[entry.status] = counts.get(entry.status, 0) + 1
        return {
            "counts": counts,
            "problems": [e.to_dict() for e in self.entries if e.status != "ok"],
        }


DriftListener = Callable[[], None]
"""Called (synchronously) after the set of blocked tools changed."""


class DriftView:
    """The one live drift state of a catalog (P-DRIFT-1).

    Writers replace one server's entries at a time (:meth:`update_server`)
    or the whole report (:meth:`replace`); readers ask :meth:`hidden` or
    take :attr:`report`. ``generation`` counts changes to the set of tools
    that must not be served, so a reader holding something derived from an
    older generation (an index built before a rug pull) knows it is stale.
    """

    def __init__(self, report: DriftReport | None = None) -> None:
        self._report = report or DriftReport()
        self._blocked = self._not_exposed(self._report)
        self.generation = 0
        self._listeners: list[DriftListener] = []

    @property
    def report(self) -> DriftReport:
        return self._report

    @property
    def blocked(self) -> frozenset[tuple[str, str]]:
        """Every listed (server, tool) that must not be served: drifted, unattested, missing."""
        return self._blocked

    def hidden(self, server: str, tool: str) -> bool:
        return (server, tool) in self._blocked

    def subscribe(self, listener: DriftListener) -> None:
        self._listeners.append(listener)

    def update_server(self, server: str, fresh: DriftReport) -> bool:
        """Replace ``server``'s entries with ``fresh``; True when the blocked set moved.

        Wholesale, not :meth:`DriftReport.merged`: an uncarded server that stops
        listing anything must lose its old entries too. One exception: a tool
        once found ``drifted`` stays so while these cards are served, even if a
        later listing matches its pin again. Per-client sessions of one server
        may list differently, and an upstream that flips between definitions
        must not make the tool callable between two re-lists; re-attesting
        (a new card) is the way back.
        """
        previous = {e.tool: e for e in self._report if e.server == server}
        entries = tuple(
            previous[e.tool]
            if e.status == "ok" and e.tool in previous and previous[e.tool].status == "drifted"
            else e
            for e in fresh.entries
        )
        others = tuple(e for e in self._report if e.server != server)
        return self.replace(DriftReport(others + entries))

    def replace(self, report: DriftReport) -> bool:
        self._report = report
        blocked = self._not_exposed(report)
        if blocked == self._blocked:
            return False
        self._blocked = blocked
        self.generation += 1
        for listener in list(self._listeners):
            listener()
        return True

    @staticmethod
    def _not_exposed(report: DriftReport) -> frozenset[tuple[str, str]]:
        return frozenset((e.server, e.tool) for e in report if not e.exposed)


def check_drift(cards: VerifiedCards, catalog: Catalog) -> DriftReport:
    """Compare every served tool with its card's pin (servers absent from ``catalog`` skipped)."""
    entries: list[ToolDrift] = []
    for server in catalog.servers:
        card = cards.get(server.name)
        if card is not None:
            cards.ensure_intact(server.name)
        listed = {tool.name for tool in server.tools}
        renamed = _renamed(card)
        for tool in server.tools:
            pinned = card.body.by_upstream(tool.name) if card is not None else None
            if pinned is None and tool.name in renamed:
                continue  # a new tool under a name the card serves another as: never served
            entries.append(_compare(server.name, tool, pinned))
        if card is not None:
            entries += [
                ToolDrift(server.name, t.name, "missing")
                for t in card.body.tools
                if t.upstream_name not in listed
            ]
    return DriftReport(tuple(entries))


def _renamed(card: Card | None) -> frozenset[str]:
    """The served names that are not the upstream's own (a transform renamed the tool)."""
    if card is None:
        return frozenset()
    return frozenset(t.name for t in card.body.tools if t.name != t.upstream_name)


def check_server_drift(cards: VerifiedCards, server: str, tools: list[ToolDef]) -> DriftReport:
    """Drift for one server's freshly listed tools (the list_changed path)."""
    return check_drift(cards, Catalog(servers=(ServerDef(name=server, tools=tuple(tools)),)))


def _compare(server: str, tool: ToolDef, pinned: ToolCard | None) -> ToolDrift:
    if pinned is None:
        return ToolDrift(server, tool.name, "unattested")
    if tool_digest(tool) == pinned.digest:
        return ToolDrift(server, pinned.name, "ok")
    return ToolDrift(server, pinned.name, "drifted", changed_parts(pinned.pins, tool_pins(tool)))


def changed_parts(pinned: Pins, served: Pins) -> tuple[str, ...]:
    changed = tuple(
        label for attr, label in _PARTS if getattr(pinned, attr) != getattr(served, attr)
    )
    return changed or ("definition",)


__all__ = [
    "DriftListener",
    "DriftReport",
    "DriftStatus",
    "DriftView",
    "ToolDrift",
    "changed_parts",
    "check_drift",
    "check_server_drift",
    "reattest_command",
    "tool_digest",
]
