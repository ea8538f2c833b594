"""Capability cards: operator-attested, Ed25519-signed descriptions of upstream servers.

Public entry points:

- :func:`cartograph.cards.attest.attest_with_unsafe_throwaway_key` — offline: template
  cards signed by a throwaway key and verified (tests, evaluation, trying things out);
- :class:`cartograph.cards.store.CardStore` — signed cards on disk, loaded only through
  verification (``load_verified``, ``load``);
- :class:`cartograph.cards.verified.VerifiedCards` — the only form cards leave this package in;
- :func:`cartograph.cards.drift.check_drift` — served definitions vs. their signed pins.
"""

from cartograph.cards.model import (
    Capability,
    Card,
    CardBody,
    Identity,
    Pins,
    Provenance,
    Signature,
    ToolCard,
)
from cartograph.cards.verified import VerifiedCards

__all__ = [
    "Capability",
    "Card",
    "CardBody",
    "Identity",
    "Pins",
    "Provenance",
    "Signature",
    "ToolCard",
    "VerifiedCards",
]
