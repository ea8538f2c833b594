"""The signed snapshot manifest: one signature over every card, for fast trust at start-up.

The TUF idea. Verifying 100k tools' cards one Ed25519 signature at a time took
seconds; instead, whoever writes cards (``cartograph bootstrap``, Rift's
regenerate) also writes ``cards/manifest.json``::

    {"body": {"type": "cartograph/card-manifest/v1", "version": N, "cards": {
        "<server>": {"file": sha256(card file bytes), "digest": <verified body digest>,
                     "version": <card version>, "key_id": <card signer>,
                     "tools": <tool count>, "generator": ..., "created_at": ...,
                     "replies": sha256(the card's reply table)}, ...}},
     "signature": {"algorithm": "ed25519", "key_id": ..., "value": base64}}

signed over ``type ‖ 0x00 ‖ key id ‖ 0x00 ‖ JCS(body)`` (its own type string:
domain separation from cards, P-SIG-5). At start-up :func:`load_with_manifest`
verifies that one signature (the signer must be trusted for every server it
vouches for), refuses a manifest older than the last one accepted
(``cards/manifest.accepted.json``: its own version, rollback protection), then
for each card only hashes the file: a card whose bytes are not the ones the
manifest names is **not served** (``card_not_in_manifest``). The card's own
signer must still be trusted and not revoked and its version must not roll
back (P-SIG-8). Cards are not parsed at start-up: :class:`VerifiedCards` parses
each the first time it is used, checks the bytes still hash as pinned and
re-derives the body digest, so a manifest cannot vouch for content it does
not pin.

``tools``, ``generator`` and ``created_at`` are what ``status`` shows of a card
(:class:`CardSummary`): with them a status report reads no card file. ``replies``
pins the card's reply table (:mod:`cartograph.cards.replies`), written here from
the verified card: what ``discover`` serves of each tool, so an answer parses no
card. A manifest without these fields (written before they existed) is still
valid; ``status`` and ``discover`` then read the cards.

``cartograph cards verify`` still verifies every card's own signature; without
a manifest (a state directory from before it existed) start-up falls back to that.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cartograph import error_codes as codes
from cartograph.cards.canonical import canonical_bytes, loads_strict, sha256_hex
from cartograph.cards.keys import SigningKey
from cartograph.cards.model import Card
from cartograph.cards.replies import REPLIES_DIR, REPLY_SUFFIX, ReplyPin, render_reply_table
from cartograph.cards.signing import ALGORITHM, Verification, parse_card
from cartograph.cards.store import (
    CARD_SUFFIX,
    CardLoadReport,
    CardStore,
    card_filename,
    read_card_bytes,
)
from cartograph.cards.trust import TrustSet
from cartograph.cards.verified import CardSummary, PinnedCard, VerifiedCards
from cartograph.errors import (
    CardError,
    CardFormatError,
    RollbackError,
    SignatureError,
    StateFileError,
)
from cartograph.fsutil import PRIVATE_FILE_MODE, atomic_write_bytes, make_private_dirs, read_bounded

MANIFEST_FILE: Final = "manifest.json"
ACCEPTED_MANIFEST_FILE: Final = "manifest.accepted.json"
MANIFEST_TYPE: Final = "cartograph/card-manifest/v1"


@dataclass(frozen=True)
class ManifestEntry:
    """What the manifest pins for one server's card."""

    file: str
    digest: str
    version: int
    key_id: str
    summary: CardSummary | None = None
    replies: str | None = None
    """SHA-256 of the card's reply table (:mod:`cartograph.cards.replies`); None: none written."""


@dataclass(frozen=True)
class Manifest:
    """A verified manifest: its version, its digest and the cards it pins."""

    version: int
    digest: str
    cards: Mapping[str, ManifestEntry]


def _message(body_bytes: bytes, key_id: str) -> bytes:
    return b"\x00".join((MANIFEST_TYPE.encode("ascii"), key_id.encode("ascii"), body_bytes))


def write_manifest(store: CardStore, key: SigningKey, trust: TrustSet | None = None) -> Manifest:
    """Sign a manifest over every card file now in ``store`` (version: previous + 1).

    Each card is verified first, under ``trust`` (the operator's trust set, so
    cards signed by the previous key during a rotation stay served; default:
    ``key`` alone). A card that does not verify is left out, so it is not served.
    Each card that verified gets its reply table (rewritten only when it
    differs), pinned by the manifest; tables of cards no longer listed are removed.
    """
    from cartograph.cards.signing import verify_card

    trust = trust if trust is not None else TrustSet.of(key.public)
    cards: dict[str, dict[str, Any]] = {}
    for server in store.servers():
        data = read_card_bytes(store.path_for(server))
        try:
            card = parse_card(data)
            proof = verify_card(card, trust, expected_server=server)
        except CardError:
            continue  # untrusted or broken: left out, so not served
        cards[server] = {
            "file": sha256_hex(data),
            "digest": proof.digest,
            "version": proof.version,
            "key_id": proof.key_id,
            "tools": len(card.body.tools),
            "generator": card.body.provenance.generator,
            "created_at": card.body.provenance.created_at,
            "replies": _write_reply_table(store, card, proof.digest),
        }
    unchanged = _unchanged_manifest(store, key, trust, cards)
    if unchanged is not None:
        _prune_reply_tables(store, cards)
        return unchanged  # a re-run signs nothing new: the files stay byte-identical
    version = _current_version(store) + 1
    body = {"type": MANIFEST_TYPE, "version": version, "cards": cards}
    body_bytes = canonical_bytes(body)
    signature = base64.b64encode(key.sign(_message(body_bytes, key.key_id))).decode("ascii")
    document = {
        "body": body,
        "signature": {"algorithm": ALGORITHM, "key_id": key.key_id, "value": signature},
    }
    atomic_write_bytes(
        store.root / MANIFEST_FILE, canonical_bytes(document) + b"\n", mode=PRIVATE_FILE_MODE
    )
    _prune_reply_tables(store, cards)  # after the manifest: the old one's tables stayed whole
    return Manifest(version, sha256_hex(body_bytes), _entries(cards))


def reply_table_path(store: CardStore, server: str) -> Path:
    """Where ``server``'s reply table is: ``cards/replies/<quoted server>.replies.json``."""
    return store.root / REPLIES_DIR / _reply_filename(server)


def _reply_filename(server: str) -> str:
    return card_filename(server).removesuffix(CARD_SUFFIX) + REPLY_SUFFIX


def _write_reply_table(store: CardStore, card: Card, digest: str) -> str:
    """Write the verified ``card``'s reply table unless it is already on disk; its SHA-256."""
    data = render_reply_table(card, digest)
    path = reply_table_path(store, card.server)
    try:
        same = read_bounded(path, len(data), inside=store.root) == data
    except (OSError, StateFileError):
        same = False  # rewritten: os.replace puts a file where a link or device was
    if not same:
        make_private_dirs(path.parent)
        atomic_write_bytes(path, data, mode=PRIVATE_FILE_MODE)
    return sha256_hex(data)


def _prune_reply_tables(store: CardStore, cards: Mapping[str, Any]) -> None:
    """Remove the tables of cards the manifest no longer lists."""
    folder = store.root / REPLIES_DIR
    if not folder.is_dir():
        return
    keep = {_reply_filename(server) for server in cards}
    for path in folder.iterdir():
        if path.is_file() and path.name not in keep:
            path.unlink(missing_ok=True)


def _unchanged_manifest(
    store: CardStore, key: SigningKey, trust: TrustSet, cards: Mapping[str, Any]
) -> Manifest | None:
    """The manifest on disk when ``key`` signed it and it pins exactly ``cards``, else None."""
    try:
        existing = read_manifest(store, trust)
        signer = loads_strict(read_card_bytes(store.root / MANIFEST_FILE))["signature"]["key_id"]
    except (CardError, KeyError, TypeError, OSError):
        return None
    if signer != key.key_id:
        return None
    if existing is None or dict(existing.cards) != _entries(cards):
        return None
    return existing


def _current_version(store: CardStore) -> int:
    """The highest manifest version seen: on disk or accepted (never reuse a number)."""
    seen = _accepted(store).get("version", 0)
    path = store.root / MANIFEST_FILE
    if path.exists():
        try:
            raw = loads_strict(read_card_bytes(path))
            seen = max(seen, int(raw["body"]["version"]))
        except (CardError, KeyError, TypeError, ValueError):
            pass
    return int(seen)


def read_manifest(store: CardStore, trust: TrustSet) -> Manifest | None:
    """The verified manifest, or None when there is none; raises when it does not verify."""
    path = store.root / MANIFEST_FILE
    if not path.exists():
        return None
    raw = loads_strict(read_card_bytes(path))
    body, signature = _parts(raw)
    key_id = signature["key_id"]
    body_bytes = canonical_bytes(body)
    cards = _entries(body["cards"])
    if not cards:
        return None  # vouches for nothing: verify each card on its own
    key = trust.key_for(key_id, next(iter(cards)))
    for server in cards:  # the signer must be trusted for every card it vouches for
        trust.key_for(key_id, server)
    try:
        key.verify(_decode(signature["value"]), _message(body_bytes, key_id))
    except SignatureError as exc:
        raise SignatureError(
            f"{path}: the card manifest does not match its signature (tampered or corrupted); "
            "re-sign it with `cartograph bootstrap`",
            code=codes.BAD_MANIFEST_SIGNATURE,
        ) from exc
    manifest = Manifest(int(body["version"]), sha256_hex(body_bytes), cards)
    _check_manifest_rollback(store, manifest)
    return manifest


def _parts(raw: Any) -> tuple[dict[str, Any], dict[str, str]]:
    try:
        body, signature = raw["body"], raw["signature"]
        ok = (
            body["type"] == MANIFEST_TYPE
            and isinstance(body["version"], int)
            and isinstance(body["cards"], dict)
            and signature["algorithm"] == ALGORITHM
            and isinstance(signature["key_id"], str)
            and isinstance(signature["value"], str)
        )
    except (KeyError, TypeError) as exc:
        raise CardFormatError(
            "card manifest has the wrong shape", code=codes.MANIFEST_SHAPE
        ) from exc
    if not ok:
        raise CardFormatError("card manifest has the wrong shape", code=codes.MANIFEST_SHAPE)
    return body, signature


def _entries(cards: Mapping[str, Any]) -> dict[str, ManifestEntry]:
    try:
        return {
            str(server): ManifestEntry(
                str(e["file"]),
                str(e["digest"]),
                int(e["version"]),
                str(e["key_id"]),
                _summary(e),
                None if e.get("replies") is None else str(e["replies"]),
            )
            for server, e in cards.items()
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise CardFormatError(
            "card manifest has the wrong shape", code=codes.MANIFEST_SHAPE
        ) from exc


def _summary(entry: Mapping[str, Any]) -> CardSummary | None:
    """The entry's :class:`CardSummary`, or None in a manifest written before it had one."""
    if "tools" not in entry:
        return None
    return CardSummary(int(entry["tools"]), str(entry["generator"]), str(entry["created_at"]))


def _decode(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureError(
            "card manifest signature is not base64", code=codes.BAD_MANIFEST_SIGNATURE
        ) from exc


def _accepted(store: CardStore) -> dict[str, Any]:
    path = store.root / ACCEPTED_MANIFEST_FILE
    if not path.exists():
        return {}
    raw = loads_strict(read_card_bytes(path))
    return raw if isinstance(raw, dict) else {}


def _check_manifest_rollback(store: CardStore, manifest: Manifest) -> None:
    """A lower version than accepted, or the same version with other content, is refused."""
    seen = _accepted(store)
    version, digest = int(seen.get("version", 0)), seen.get("digest")
    if manifest.version < version or (manifest.version == version and digest != manifest.digest):
        raise RollbackError(
            f"card manifest is version {manifest.version}, but version {version} was already "
            "accepted (rollback or replay); restore the newer cards or run `cartograph bootstrap`",
            code=codes.MANIFEST_ROLLBACK,
        )
    if manifest.version > version:
        record = {"version": manifest.version, "digest": manifest.digest}
        atomic_write_bytes(
            store.root / ACCEPTED_MANIFEST_FILE,
            canonical_bytes(record) + b"\n",
            mode=PRIVATE_FILE_MODE,
        )


def load_with_manifest(
    store: CardStore, trust: TrustSet, servers: Iterable[str] | None = None
) -> CardLoadReport | None:
    """Cards pinned by the verified manifest (None: no manifest, verify each card instead).

    Per card: hash the file and compare with the manifest, parse it strictly,
    check that its signer is trusted for it and its version does not roll
    back. A card the manifest does not pin is reported as a failure
    (``card_not_in_manifest``) and not served.
    """
    manifest = read_manifest(store, trust)
    if manifest is None:
        return None
    wanted = store.servers() if servers is None else list(servers)
    accepted = store.accepted()
    pinned: list[PinnedCard] = []
    failures: dict[str, CardError] = {}
    for server in wanted:
        try:
            pinned.append(_pinned(store, trust, manifest, accepted, server))
        except CardError as exc:
            failures[server] = exc
    store.raise_accepted(pin.proof for pin in pinned)
    return CardLoadReport(VerifiedCards.pinned(pinned), failures)


def _pinned(
    store: CardStore,
    trust: TrustSet,
    manifest: Manifest,
    accepted: Mapping[str, Mapping[str, Any]],
    server: str,
) -> PinnedCard:
    """One card's file checked against the manifest; it is parsed when first used.

    What the manifest's signature covers (the body digest, version and signer
    of the card) is checked here; that the file's body has that digest and
    names that signer is checked when :class:`VerifiedCards` first reads it.
    """
    path = store.path_for(server)
    data = read_card_bytes(path)
    entry = manifest.cards.get(server)
    file_sha256 = hashlib.sha256(data).hexdigest()
    if entry is None or file_sha256 != entry.file:
        raise CardError(
            f"{card_filename(server)} is not the card the signed manifest names "
            f"(changed or added since); re-attest with `cartograph bootstrap --server {server}`",
            code=codes.CARD_NOT_IN_MANIFEST,
            server=server,
        )
    key = trust.key_for(entry.key_id, server)  # the card's signer: trusted, in scope, not revoked
    proof = Verification(server, key.key_id, entry.digest, entry.version)
    store.check_rollback(proof, accepted.get(server, {}))
    replies = None
    if entry.replies is not None:
        replies = ReplyPin(reply_table_path(store, server), entry.replies, store.root)
    return PinnedCard(proof, file_sha256, lambda: read_card_bytes(path), entry.summary, replies)


__all__ = [
    "ACCEPTED_MANIFEST_FILE",
    "MANIFEST_FILE",
    "MANIFEST_TYPE",
    "Manifest",
    "ManifestEntry",
    "load_with_manifest",
    "read_manifest",
    "reply_table_path",
    "write_manifest",
]
