"""Verified cards signed by a key the test controls (so two runs can share a signer)."""

from __future__ import annotations

from cartograph.cards.attest import build_body
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.keys import SigningKey
from cartograph.cards.signing import sign_card, verify_card
from cartograph.cards.trust import TrustSet
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog

CREATED = "2026-01-01T00:00:00Z"


def signed_cards(catalog: Catalog, key: SigningKey) -> VerifiedCards:
    generator = TemplateGenerator()
    texts = generator.describe_all(catalog.servers)
    trust = TrustSet.of(key.public)
    verified = []
    for server in catalog.servers:
        body = build_body(server, texts[server.name], generator.info, version=1, created_at=CREATED)
        card = sign_card(body, key)
        verified.append((card, verify_card(card, trust, expected_server=server.name)))
    return VerifiedCards(verified)
