"""Signing and verifying cards (P-SIG-3, P-SIG-4, P-SIG-5, P-SIG-9).

The signed message is a fixed type string, the signer's key id, and the RFC
8785 bytes of the card body. The type string is domain separation: the same
key signing anything else (another protocol's payload, a raw body) can never
produce something that verifies as a card. Binding the key id stops a
signature being re-labelled with another trusted key's id.

Verification only raises; there is no ``-> bool`` here on purpose.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from cartograph import error_codes as codes
from cartograph.cards.canonical import canonical_bytes, loads_strict, sha256_hex
from cartograph.cards.keys import SigningKey
from cartograph.cards.model import CARD_FORMAT_VERSION, Card, CardBody, Signature
from cartograph.cards.trust import TrustSet
from cartograph.errors import CardFormatError, SignatureError
from cartograph.validation import first_problem

CARD_SIGNATURE_TYPE: Final = b"cartograph/capability-card/v1"
ALGORITHM: Final = "ed25519"


def signed_message(body: CardBody, key_id: str) -> bytes:
    """type string ‖ 0x00 ‖ key id ‖ 0x00 ‖ JCS(body): exactly what Ed25519 signs."""
    return _message(canonical_bytes(body.json_dict()), key_id)


def _message(body_bytes: bytes, key_id: str) -> bytes:
    return b"\x00".join((CARD_SIGNATURE_TYPE, key_id.encode("ascii"), body_bytes))


def body_digest(body: CardBody) -> str:
    """SHA-256 of the canonical body: what a verified card is re-checked against."""
    return sha256_hex(canonical_bytes(body.json_dict()))


def sign_card(body: CardBody, key: SigningKey) -> Card:
    signature = key.sign(signed_message(body, key.key_id))
    return Card(
        body=body,
        signature=Signature(
            algorithm=ALGORITHM,
            key_id=key.key_id,
            value=base64.b64encode(signature).decode("ascii"),
        ),
    )


@dataclass(frozen=True)
class Verification:
    """Proof that one card verified: its body digest and the key that signed it."""

    server: str
    key_id: str
    digest: str
    version: int


def verify_card(card: Card, trust: TrustSet, *, expected_server: str) -> Verification:
    """Verify ``card`` as the card for ``expected_server`` or raise a typed error."""
    if card.server != expected_server:
        raise SignatureError(
            f"card names server {card.server!r} but was presented as {expected_server!r}'s "
            f"card; re-attest with `cartograph bootstrap --server {expected_server}`",
            code=codes.CARD_SERVER_MISMATCH,
            server=expected_server,
        )
    if card.signature.algorithm != ALGORITHM:
        raise SignatureError(
            f"card for {expected_server!r} uses algorithm {card.signature.algorithm!r}; "
            f"only {ALGORITHM} is accepted",
            code=codes.BAD_ALGORITHM,
            server=expected_server,
        )
    _require_format(card.body.format)
    _check_unique_tools(card.body)
    key = trust.key_for(card.signature.key_id, card.server)
    signature = _decode_signature(card)
    # Canonicalised once: the signed message and the recorded digest share it.
    body_bytes = canonical_bytes(card.body.json_dict())
    try:
        key.verify(signature, _message(body_bytes, card.signature.key_id))
    except SignatureError as exc:
        raise SignatureError(
            f"card for {expected_server!r} does not match its signature (tampered or "
            f"corrupted); re-attest with `cartograph bootstrap --server {expected_server}`",
            code=codes.BAD_SIGNATURE,
            server=expected_server,
        ) from exc
    return Verification(card.server, key.key_id, sha256_hex(body_bytes), card.version)


def _decode_signature(card: Card) -> bytes:
    try:
        raw = base64.b64decode(card.signature.value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureError(
            f"card for {card.server!r} has a signature that is not base64",
            code=codes.BAD_SIGNATURE,
            server=card.server,
        ) from exc
    if len(raw) != 64:
        raise SignatureError(
            f"card for {card.server!r} has a {len(raw)}-byte signature; Ed25519 uses 64",
            code=codes.BAD_SIGNATURE,
            server=card.server,
        )
    return raw


def _check_unique_tools(body: CardBody) -> None:
    names = [t.name for t in body.tools]
    upstream = [t.upstream_name for t in body.tools]
    if len(names) != len(set(names)) or len(upstream) != len(set(upstream)):
        raise CardFormatError(
            f"card for {body.server!r} lists a tool twice", code=codes.CARD_DUPLICATE_TOOL
        )


def parse_card(data: bytes) -> Card:
    """Strictly parse card file bytes into a :class:`Card` (no verification yet).

    The parsed JSON must be exactly the model's own rendering, so what is
    verified is what was read: no silent coercion, no ignored fields.
    """
    raw = loads_strict(data)
    _check_format(raw)
    try:
        card = Card.model_validate(raw)
    except ValidationError as exc:
        problem = first_problem(exc)
        raise CardFormatError(
            f"bad card shape at {problem.key}: {problem.message}", code=codes.CARD_SHAPE
        ) from exc
    if _typed_json(raw) != _typed_json(card.json_dict()):
        raise CardFormatError(
            "card JSON differs from its canonical model form (coerced or missing fields)",
            code=codes.CARD_NOT_CANONICAL,
        )
    return card


def _check_format(raw: object) -> None:
    """Refuse a card written in another format before reading its fields.

    A card's fields mean what its format says; reading an older format under
    today's model would silently fill the fields it lacks. The card's own
    signature cannot vouch for a format we do not read, so it is refused.
    """
    body = raw.get("body") if isinstance(raw, dict) else None
    _require_format(body.get("format") if isinstance(body, dict) else None)


def _require_format(found: object) -> None:
    if found != CARD_FORMAT_VERSION or isinstance(found, bool):
        raise CardFormatError(
            f"card is in format {found!r}; this Cartograph reads format {CARD_FORMAT_VERSION}. "
            "Re-attest with `cartograph bootstrap`",
            code=codes.CARD_FORMAT_VERSION,
        )


def _typed_json(value: Any) -> str:
    """A deterministic text of ``value`` that tells ``1``, ``1.0``, ``True`` and ``"1"`` apart.

    For the parse check only (is the model exactly what was read?): C ``json``
    with sorted keys answers that as well as comparing two RFC 8785 forms, at a
    fraction of the cost — card loading was dominated by canonicalisation (issue 12).
    ``loads_strict`` has already applied the strict value checks. Signing and
    digests stay RFC 8785.
    """
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    )


def render_card(card: Card) -> bytes:
    """The on-disk bytes of a card: stable, human-readable JSON.

    Readability is for operators; verification never depends on this layout
    because it re-canonicalises the parsed body.
    """
    return (json.dumps(card.json_dict(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
