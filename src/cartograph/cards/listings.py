"""What each server listed when its card was signed, kept so ``cards diff`` can show old text.

A card pins every tool by digest (``Pins``), not by text: enough to detect a
change, not to show it. At attestation the listing is saved beside the cards
(``<cards>/.listings/``, unsigned). It is trusted only through the signed
pins: :func:`attested_tool` returns the saved definition only when its
digests equal the card's pins, so an edited listing can never be shown as
what was attested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pydantic import ValidationError

from cartograph.cards.digest import tool_pins
from cartograph.cards.model import ToolCard
from cartograph.cards.store import CARD_SUFFIX, card_filename
from cartograph.catalog.model import ServerDef, ToolDef
from cartograph.errors import StateFileError
from cartograph.fsutil import atomic_write_text, read_bounded

LISTINGS_DIR: Final = ".listings"
MAX_LISTING_BYTES: Final = 8 * 1024 * 1024


def listing_path(cards_root: Path, server: str) -> Path:
    name = card_filename(server).removesuffix(CARD_SUFFIX) + ".listing.json"
    return cards_root / LISTINGS_DIR / name


def save_listing(cards_root: Path, server: ServerDef) -> None:
    """Keep ``server``'s listing as attested (private, like the cards)."""
    text = server.model_dump_json(by_alias=True, indent=1)
    atomic_write_text(listing_path(cards_root, server.name), text + "\n", mode=0o600)


def attested_tool(cards_root: Path, server: str, card_tool: ToolCard) -> ToolDef | None:
    """The tool as listed at attestation, if saved and matching the card's signed pins."""
    path = listing_path(cards_root, server)
    try:
        listed = ServerDef.model_validate_json(
            read_bounded(path, MAX_LISTING_BYTES, inside=cards_root)
        )
    except (OSError, StateFileError, ValidationError):
        return None
    tool = next((t for t in listed.tools if t.name == card_tool.upstream_name), None)
    if tool is None or tool_pins(tool) != card_tool.pins:
        return None
    return tool
