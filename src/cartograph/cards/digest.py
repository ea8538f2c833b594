"""Drift pins: SHA-256 over the canonical *full* tool definition (P-CARD-2).

A tool's pin covers name, description, inputSchema, outputSchema, annotations
and title, so a rug pull that edits any of them changes the digest. The name
is inside the digest, so swapping two tools' definitions is caught too
(P-CARD-3). The per-part :class:`Pins` let a drift error say *what* changed.
"""

from __future__ import annotations

from typing import Any, Final

from cartograph.cards.canonical import canonical_digest
from cartograph.cards.model import Pins
from cartograph.catalog.model import ServerDef, ToolDef


def tool_digest(tool: ToolDef) -> str:
    """SHA-256 (hex) of the RFC 8785 form of the tool's full wire definition."""
    return canonical_digest(tool.definition())


def tool_pins(tool: ToolDef) -> Pins:
    return Pins(
        description=_part(tool.description),
        input_schema=_part(tool.input_schema),
        output_schema=_part(tool.output_schema),
        annotations=_part(tool.annotations),
        title=_part(tool.title),
    )


def server_digest(server: ServerDef) -> str:
    """One digest for everything a card was generated from: server text plus every tool pin.

    Bootstrap compares it to decide whether a server changed and its card
    needs a new version; unchanged servers keep their card byte for byte.
    """
    return canonical_digest(
        {
            "name": server.name,
            "description": server.description,
            "tools": {tool.name: tool_digest(tool) for tool in server.tools},
        }
    )


def _part(value: Any) -> str:
    return canonical_digest({"value": value})


BLANK_DESCRIPTION_PIN: Final = _part("")
"""``Pins.description`` of a tool its publisher gave no description: equal pins then
say nothing about two tools being described alike (Rift's name-only copies)."""
