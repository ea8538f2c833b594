"""The card store: signed cards on disk, loaded only through verification.

Layout under the state directory::

    cards/<quoted server name>.card.json   one signed card per server
    cards/accepted.json                    highest version accepted per server (P-SIG-8)

Writes are atomic (P-REL-9). Loading never rewrites a card (paper §4: normal
start-up loads cards without regenerating them); it only raises the
accepted-version record when it sees a newer card. A card whose version is
lower than the record's is a rollback and is refused, as is a *different*
card reusing an accepted version number.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote

from cartograph import error_codes as codes
from cartograph.cards.canonical import MAX_CARD_BYTES, canonical_bytes, loads_strict
from cartograph.cards.model import Card
from cartograph.cards.signing import (
    Verification,
    body_digest,
    parse_card,
    render_card,
    verify_card,
)
from cartograph.cards.trust import TrustSet
from cartograph.cards.verified import VerifiedCards
from cartograph.errors import CardError, CardFormatError, RollbackError, StateFileError
from cartograph.fsutil import PRIVATE_FILE_MODE, atomic_write_bytes, read_bounded

CARD_SUFFIX: Final = ".card.json"
ACCEPTED_FILE: Final = "accepted.json"
CARDS_DIR: Final = "cards"

log = logging.getLogger(__name__)


def card_filename(server: str) -> str:
    """A file name that round-trips any server name (``/`` and ``..`` cannot escape)."""
    return quote(server, safe=" -_()[]+,@").replace(".", "%2E") + CARD_SUFFIX


def server_from_filename(name: str) -> str:
    return unquote(name[: -len(CARD_SUFFIX)])


@dataclass(frozen=True)
class CardLoadReport:
    """Which cards verified and, for every other card file, the typed reason it did not."""

    verified: VerifiedCards
    failures: Mapping[str, CardError] = field(default_factory=dict)


class CardStore:
    """Signed cards in ``<state_dir>/cards`` (or in a folder of cards given directly)."""

    def __init__(self, state_dir: Path) -> None:
        direct = state_dir.name == CARDS_DIR or any(state_dir.glob(f"*{CARD_SUFFIX}"))
        self.root = state_dir if direct else state_dir / CARDS_DIR
        self._pending: dict[str, dict[str, Any]] | None = None  # the record, inside batch()
        self._dirty = False

    def path_for(self, server: str) -> Path:
        return self.root / card_filename(server)

    def servers(self) -> list[str]:
        """Server names that have a card file, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(server_from_filename(p.name) for p in self.root.glob(f"*{CARD_SUFFIX}"))

    def read(self, server: str) -> Card:
        """Parse (but do not verify) ``server``'s card. Size-limited (P-REL-5)."""
        return read_card_file(self.path_for(server))

    def write(self, card: Card) -> Path:
        """Write one card atomically and record its version as accepted.

        Outside :meth:`batch` the record is rewritten at once; inside, once at the end.
        """
        path = self.path_for(card.server)
        atomic_write_bytes(path, render_card(card), mode=PRIVATE_FILE_MODE)
        record = self._record()
        record[card.server] = {"version": card.version, "digest": _digest(card)}
        self._store_record(record)
        return path

    def write_many(self, cards: Iterable[Card]) -> list[Path]:
        """Write several cards, then the accepted-versions record once (see :meth:`batch`)."""
        with self.batch():
            return [self.write(card) for card in cards]

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Read the accepted-versions record once and write it once, at the end.

        Why: the record lists every server, so rewriting it per card (as a plain
        :meth:`write` must) is quadratic; bootstrap of thousands of servers took
        minutes. Inside the batch, reads and writes use one in-memory copy.

        Order for P-REL-9 — cards first, record last: each card lands atomically,
        and the record is written after them. A crash in between leaves cards whose
        versions are *above* the record, which loading accepts and then raises the
        record to. The reverse order would leave a record above the old card on
        disk, which loading refuses as a rollback. The record is also written when
        the batch exits by an exception, so it covers every card already on disk.
        Nested batches join the outer one.
        """
        if self._pending is not None:
            yield
            return
        self._pending, self._dirty = self.accepted(), False
        try:
            yield
        finally:
            record, dirty = self._pending, self._dirty
            self._pending, self._dirty = None, False
            if dirty:
                self._save_accepted(record)

    def _record(self) -> dict[str, dict[str, Any]]:
        """The record to read or update: the batch's copy, or a fresh read of the file."""
        return self._pending if self._pending is not None else self.accepted()

    def _store_record(self, record: dict[str, dict[str, Any]]) -> None:
        if self._pending is not None:
            self._pending, self._dirty = record, True
        else:
            self._save_accepted(record)

    def accepted(self) -> dict[str, dict[str, Any]]:
        """The persisted highest-accepted version (and its body digest) per server."""
        if self._pending is not None:
            return {k: dict(v) for k, v in self._pending.items()}
        path = self.root / ACCEPTED_FILE
        if not path.exists():
            return {}
        raw = loads_strict(_read_limited(path))
        servers = raw.get("servers") if isinstance(raw, dict) else None
        if not isinstance(servers, dict):
            raise CardFormatError(
                f"{path}: malformed accepted-versions record", code=codes.CARD_SHAPE
            )
        return {str(k): dict(v) for k, v in servers.items() if isinstance(v, dict)}

    def accepted_version(self, server: str) -> int:
        entry = self._record().get(server, {})
        version = entry.get("version", 0)
        return version if isinstance(version, int) else 0

    def _save_accepted(self, record: Mapping[str, Mapping[str, Any]]) -> None:
        body = {"servers": {k: dict(record[k]) for k in sorted(record)}}
        atomic_write_bytes(
            self.root / ACCEPTED_FILE, canonical_bytes(body) + b"\n", mode=PRIVATE_FILE_MODE
        )

    def verify_one(self, server: str, trust: TrustSet) -> tuple[Card, Verification]:
        """Read, verify and rollback-check one card; raise the typed reason on failure."""
        return self._verify(server, trust, self._record())

    def _verify(
        self, server: str, trust: TrustSet, accepted: Mapping[str, Mapping[str, Any]]
    ) -> tuple[Card, Verification]:
        card = self.read(server)
        proof = verify_card(card, trust, expected_server=server)
        self._check_rollback(proof, accepted.get(server, {}))
        return card, proof

    def load(self, trust: TrustSet, *, servers: Iterable[str] | None = None) -> CardLoadReport:
        """Verify every card (or those of ``servers``), collecting per-card failures."""
        wanted = self.servers() if servers is None else list(servers)
        verified: list[tuple[Card, Verification]] = []
        failures: dict[str, CardError] = {}
        accepted = self._record()  # once, not per card: it lists every server
        for server in wanted:
            try:
                verified.append(self._verify(server, trust, accepted))
            except CardError as exc:
                failures[server] = exc
        self._raise_accepted(proof for _, proof in verified)
        return CardLoadReport(VerifiedCards(verified), failures)

    def load_verified(self, trust: TrustSet, *, strict: bool = True) -> VerifiedCards:
        """Every card, verified; ``strict`` raises the first failure, else bad cards are skipped."""
        report = self.load(trust)
        if strict and report.failures:
            raise next(iter(report.failures.values()))
        for server, exc in report.failures.items():
            log.warning("card for %s not loaded (%s): %s", server, exc.code, exc.message)
        return report.verified

    def check_rollback(self, proof: Verification, entry: Mapping[str, Any]) -> None:
        """Raise :class:`RollbackError` if the verified card is older than (or reuses) the
        accepted one (``entry``: the accepted record of its server)."""
        self._check_rollback(proof, entry)

    def raise_accepted(self, proofs: Iterable[Verification]) -> None:
        """Record newer versions of verified cards as accepted."""
        self._raise_accepted(proofs)

    def _check_rollback(self, proof: Verification, entry: Mapping[str, Any]) -> None:
        accepted = entry.get("version", 0)
        if not isinstance(accepted, int):
            return
        server, version = proof.server, proof.version
        if version < accepted:
            raise RollbackError(
                f"card for {server!r} is version {version}, but version {accepted} "
                f"was already accepted (rollback); restore the newer card or re-attest with "
                f"`cartograph bootstrap --server {server}`",
                code=codes.ROLLBACK,
                server=server,
            )
        if version == accepted and entry.get("digest") not in (None, proof.digest):
            raise RollbackError(
                f"card for {server!r} reuses accepted version {accepted} with different "
                f"content; re-attest with `cartograph bootstrap --server {server}`",
                code=codes.VERSION_REUSED,
                server=server,
            )

    def _raise_accepted(self, proofs: Iterable[Verification]) -> None:
        record = self._record()
        changed = False
        for proof in proofs:
            entry = record.get(proof.server, {})
            if proof.version > int(entry.get("version", 0) or 0):
                record[proof.server] = {"version": proof.version, "digest": proof.digest}
                changed = True
        if changed:
            self._store_record(record)


def _digest(card: Card) -> str:
    return body_digest(card.body)


def read_card_file(path: Path) -> Card:
    return parse_card(_read_limited(path))


def read_card_bytes(path: Path) -> bytes:
    """A card (or manifest) file's bytes, size-limited (P-REL-5); ``card_missing`` if absent."""
    return _read_limited(path)


def _read_limited(path: Path) -> bytes:
    """At most :data:`MAX_CARD_BYTES` of a regular file inside its folder (P-REL-5, P-REL-13)."""
    try:
        return read_bounded(path, MAX_CARD_BYTES, inside=path.parent)
    except FileNotFoundError as exc:
        raise CardError(
            f"{path}: no card; run `cartograph bootstrap`", code=codes.CARD_MISSING
        ) from exc
    except StateFileError as exc:
        code = codes.CARD_TOO_LARGE if exc.code == codes.STATE_FILE_TOO_LARGE else exc.code
        raise CardFormatError(exc.message, code=code) from exc
