"""Reply tables: what ``discover`` serves of each tool, derived once from the verified card.

After a restart, cards pinned by the signed manifest are parsed the first time
a ``discover`` answer needs one (:class:`~cartograph.cards.verified.VerifiedCards`):
a strict pydantic parse and a JCS re-canonicalisation to re-derive the body
digest. At 100k tools that was ~9 ms per newly answered server and most of a
query's CPU (issue 12), while an answer uses four facts of one tool.

So whoever signs the manifest (:func:`~cartograph.cards.manifest.write_manifest`:
``cartograph bootstrap``, Rift's regenerate) also writes, for every card that
verified, ``cards/replies/<quoted server name>.replies.json``::

    {"type": "cartograph/card-replies/v1", "server": S, "digest": <verified body digest>,
     "card_version": N, "generator": ..., "generator_version": ...,
     "tools": {"<tool>": "<JSON text of {description, input_schema, example}>", ...}}

and the manifest's signed entry for the card records ``replies``: the SHA-256 of
that file. Serving reads a table the first time one of its tools is answered,
checks its hash against the signed entry and that it names the card's server and
verified digest — no card parse. Each tool's fragment stays JSON *text* (an
immutable string) and is decoded afresh for every answer, so nothing an answer
hands out can change what a later answer serves (P-SIG-3).

A table that is missing, changed or malformed raises :class:`CardError`
(``reply_table_damaged``); the caller logs it and serves that server from its
verified card instead — a damaged table is never served. So does one over
:data:`MAX_REPLY_TABLE_BYTES`, a device or FIFO in its place, or a symlink out of
the cards folder (P-REL-13): at most the limit plus one byte is read, and the log
line carries the cause's code (``state_file_too_large``, ``state_file_unsafe``). A manifest entry
without ``replies`` (written before tables existed) is served from the card.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cartograph import error_codes as codes
from cartograph.cards.canonical import MAX_CARD_BYTES
from cartograph.cards.model import Card
from cartograph.errors import CardError, StateFileError
from cartograph.fsutil import read_bounded

REPLIES_DIR: Final = "replies"
REPLY_SUFFIX: Final = ".replies.json"
REPLY_TABLE_TYPE: Final = "cartograph/card-replies/v1"
MAX_REPLY_TABLE_BYTES: Final = 2 * MAX_CARD_BYTES
"""A table holds less than its card, but each fragment is JSON text inside JSON (quotes doubled)."""


@dataclass(frozen=True)
class ToolReply:
    """What ``discover`` serves of one tool: its verified card text and the card's provenance.

    ``input_schema`` and ``example`` are fresh objects for every reply
    (the caller may keep or change them without touching later replies).
    """

    description: str
    input_schema: dict[str, Any]
    example: dict[str, Any]
    card_version: int
    generator: str
    generator_version: str


@dataclass(frozen=True)
class ReplyTable:
    """One server's verified reply table: provenance plus each tool's fragment as JSON text."""

    server: str
    digest: str
    card_version: int
    generator: str
    generator_version: str
    tools: Mapping[str, str]

    def reply(self, tool: str) -> ToolReply | None:
        """``tool``'s reply, decoded afresh; None when the card has no such tool."""
        text = self.tools.get(tool)
        if text is None:
            return None
        fragment = json.loads(text)
        return ToolReply(
            fragment["description"],
            fragment["input_schema"],
            fragment["example"],
            self.card_version,
            self.generator,
            self.generator_version,
        )


@dataclass(frozen=True)
class ReplyPin:
    """Where a server's reply table is and the SHA-256 the signed manifest pins for it."""

    path: Path
    sha256: str
    inside: Path | None = None
    """The folder the table must resolve inside (the cards folder); None: the table's own."""


def tool_reply(card: Card, tool: str) -> ToolReply | None:
    """``tool``'s reply read from a parsed, verified card (the path without a table)."""
    entry = card.body.tool(tool)
    if entry is None:
        return None
    prov = card.body.provenance
    return ToolReply(
        entry.description,
        entry.input_schema,
        entry.example,
        prov.card_version,
        prov.generator,
        prov.generator_version,
    )


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def render_reply_table(card: Card, digest: str) -> bytes:
    """The reply table of a card that verified with body ``digest`` (deterministic bytes)."""
    prov = card.body.provenance
    tools = {
        t.name: _text(
            {"description": t.description, "input_schema": t.input_schema, "example": t.example}
        )
        for t in card.body.tools
    }
    document = {
        "type": REPLY_TABLE_TYPE,
        "server": card.server,
        "digest": digest,
        "card_version": prov.card_version,
        "generator": prov.generator,
        "generator_version": prov.generator_version,
        "tools": tools,
    }
    return (_text(document) + "\n").encode("utf-8")


def read_reply_table(pin: ReplyPin, server: str, digest: str) -> ReplyTable:
    """``server``'s table, checked against the manifest's pin and the card's verified digest.

    Raises :class:`CardError` (``reply_table_damaged``) when the file is missing, its bytes are
    not the pinned ones, or it names another server or card.
    """
    try:
        data = read_bounded(pin.path, MAX_REPLY_TABLE_BYTES, inside=pin.inside or pin.path.parent)
    except StateFileError as exc:
        raise _damaged(server, f"is not read ({exc.code})", cause=exc.code) from exc
    except OSError as exc:
        raise _damaged(server, f"cannot be read ({exc.strerror})") from exc
    if hashlib.sha256(data).hexdigest() != pin.sha256:
        raise _damaged(server, "is not the one the signed manifest pins (changed or replaced)")
    try:
        raw = json.loads(data)
        table = ReplyTable(
            server=str(raw["server"]),
            digest=str(raw["digest"]),
            card_version=int(raw["card_version"]),
            generator=str(raw["generator"]),
            generator_version=str(raw["generator_version"]),
            tools={str(k): str(v) for k, v in raw["tools"].items()},
        )
        ok = raw["type"] == REPLY_TABLE_TYPE
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _damaged(server, "has the wrong shape") from exc
    if not ok or table.server != server or table.digest != digest:
        raise _damaged(server, "is for another server or another version of its card")
    return table


def _damaged(server: str, why: str, **details: str) -> CardError:
    return CardError(
        f"the reply table for {server!r} {why}; its tools are served from the verified card "
        f"(re-run `cartograph bootstrap` to rewrite the table)",
        code=codes.REPLY_TABLE_DAMAGED,
        server=server,
        **details,
    )


__all__ = [
    "MAX_REPLY_TABLE_BYTES",
    "REPLIES_DIR",
    "REPLY_SUFFIX",
    "REPLY_TABLE_TYPE",
    "ReplyPin",
    "ReplyTable",
    "ToolReply",
    "read_reply_table",
    "render_reply_table",
    "tool_reply",
]
