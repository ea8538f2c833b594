"""Verified cards: the only form in which cards leave the ``cards`` package.

A :class:`VerifiedCards` can only be built from :class:`Verification` results,
and it remembers each card's verified body digest. Cards are frozen pydantic
models, but their schema dicts are still mutable Python objects; so before
anything serves a card it re-checks it (P-SIG-3): :meth:`ensure_intact`
re-canonicalises the whole card (load, index build, ``discover``), and
:meth:`ensure_tool_intact` re-checks only what one ``call`` serves — the
card's header and the one tool — against fingerprints recorded at
verification, so the per-call check stays cheap on large cards.

What the checks can and cannot catch: anything that changes the card's
*value* through a reference (a schema dict mutated in place, a field swapped
with ``object.__setattr__``, a tool appended to the tuple) is refused before
it is served. Code with arbitrary in-process memory access could also rewrite
the recorded digests or this class itself; no in-process check survives that,
and none is claimed. That is also why the fingerprints are never keyed by
object identity: identity says nothing about mutable dicts inside a frozen
model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from cartograph import error_codes as codes
from cartograph.cards.canonical import canonical_bytes, check_value, sha256_hex
from cartograph.cards.model import Card, ToolCard
from cartograph.cards.replies import ReplyPin, ReplyTable, ToolReply, read_reply_table, tool_reply
from cartograph.cards.signing import Verification, body_digest, parse_card
from cartograph.errors import CardError, CardFormatError, SignatureError

SignatureFields = tuple[str, str, str]
MAX_REPLY_TABLES = 1024
"""Reply tables kept decoded (least recently answered dropped first): ~25 KB each at 100k."""
_log = logging.getLogger(__name__)


def fingerprint(model: BaseModel, *, exclude: set[str] | None = None, strict: bool = True) -> str:
    """SHA-256 of a strict, deterministic JSON form of ``model``'s current value.

    An in-process integrity fingerprint, not a signing form (signing is RFC
    8785, :mod:`cartograph.cards.canonical`). It applies the same strict value
    checks as canonicalisation, so a type confusion (``1`` → ``True``, a
    non-string key, NaN) cannot hide behind an equal serialisation, and then
    uses C ``json.dumps`` with sorted keys: about 3x cheaper than JCS in pure
    Python, which is what makes a per-call check affordable.

    ``strict=False`` skips the value checks, for a fingerprint that is only ever
    compared with one taken of a checked value (the per-call re-check): the
    pydantic JSON dump has string keys and no NaN, ``json.dumps`` tells ``true``
    from ``1`` and ``1.0``, refuses other types (``TypeError``) and the UTF-8
    encoding refuses an unpaired surrogate (``ValueError``), so equal text means
    an equal, checkable value and any other change is a different fingerprint.
    The Python walk of the checks was most of the per-call check's cost.
    """
    signed = getattr(model, "json_dict", None)  # a card's parts render as they are signed
    value = (
        signed()
        if exclude is None and signed is not None
        else model.model_dump(mode="json", exclude=exclude)
    )
    if strict:
        check_value(value)
    return _checked_fingerprint(value)


def _checked_fingerprint(value: Any) -> str:
    """:func:`fingerprint` of a JSON value that already passed ``check_value``."""
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _state(model: BaseModel, exclude: set[str] | None) -> bytes:
    """SHA-256 of ``model`` as pydantic serialises it now (fields in order, NaN as null
    as the fingerprint's JSON dump has it); raises ValueError where it is not JSON."""
    return hashlib.sha256(to_json(model, exclude=exclude)).digest()


def _signature_fields(card: Card) -> SignatureFields:
    # Copies of immutable strings: mutating the live Signature object cannot reach these.
    sig = card.signature
    return (sig.algorithm, sig.key_id, sig.value)


@dataclass(frozen=True)
class CardSummary:
    """What ``status`` shows of a card: counted and named without parsing it.

    The signed manifest carries it for every card it pins
    (:mod:`cartograph.cards.manifest`), so a status report over 100k tools
    does not parse 4,000 cards; without it the card is read.
    """

    tools: int
    generator: str
    created_at: str


@dataclass(frozen=True)
class PinnedCard:
    """A card file vouched for by a verified manifest, parsed only when first used.

    ``proof`` comes from the manifest (its signature verified, the file's
    signer trusted for the server, no rollback); ``file_sha256`` is the hash
    the manifest pins and the file had at load. When the card is first read,
    its bytes must still hash to it and its body must have ``proof.digest``.
    """

    proof: Verification
    file_sha256: str
    read: Callable[[], bytes]
    summary: CardSummary | None = None
    replies: ReplyPin | None = None
    """Where the card's reply table is and its pinned hash; None: answer from the card."""


class VerifiedCards(Mapping[str, Card]):
    """Server name → verified :class:`Card`, plus who signed each and its digest.

    Cards pinned by the signed manifest (:meth:`pinned`) are held as file
    hashes and verification records only, and parsed the first time anything
    reads one (a ``discover`` answer, a ``call``): at 100k tools a pydantic
    object graph per card was most of start-up and of the serving process's
    memory, and ranking needs none of it (the index is persisted, keyed by
    the verified digests, :mod:`cartograph.index.snapshot`).
    """

    def __init__(self, verified: Iterable[tuple[Card, Verification]] = ()) -> None:
        self._cards: dict[str, Card] = {}
        self._proofs: dict[str, Verification] = {}
        self._signatures: dict[str, SignatureFields] = {}
        self._headers: dict[str, str] = {}
        self._tools: dict[str, dict[str, str]] = {}
        self._states: dict[str, dict[str | None, bytes]] = {}
        """Per server, the header's (``None``) and each called tool's :func:`_state`,
        taken right after it last passed the fingerprint check (see ``_unchanged``)."""
        self._pending: dict[str, PinnedCard] = {}
        self._reply_pins: dict[str, ReplyPin] = {}
        self._reply_tables: OrderedDict[str, ReplyTable] = OrderedDict()
        self._reply_lock = threading.Lock()
        self._pool = _SharedValues()
        for card, proof in verified:
            self._admit(card, proof)

    @classmethod
    def pinned(cls, cards: Iterable[PinnedCard]) -> VerifiedCards:
        """Cards whose verification records come from the signed manifest; parsed on first use."""
        out = cls()
        for pin in cards:
            out._proofs[pin.proof.server] = pin.proof
            out._pending[pin.proof.server] = pin
            if pin.replies is not None:
                out._reply_pins[pin.proof.server] = pin.replies
        return out

    def _admit(self, card: Card, proof: Verification) -> None:
        # One JSON value of the body serves the digest and every fingerprint:
        # canonicalising it applies the strict value checks to all of it, so
        # the header's and each tool's fingerprint is its part of that value
        # (what fingerprint() computes from the model, without 1 + tools more
        # dumps and checks: a card is admitted on its first discover answer).
        body = card.body.json_dict()
        if proof.server != card.server or proof.digest != sha256_hex(canonical_bytes(body)):
            raise SignatureError(
                f"card for {card.server!r} does not match its verification record",
                code=codes.CARD_NOT_INTACT,
                server=card.server,
            )
        tools = body.pop("tools")
        header = _checked_fingerprint(body)
        prints = {
            t.name: _checked_fingerprint(v) for t, v in zip(card.body.tools, tools, strict=True)
        }
        self._pool.compact(card)  # changes no value: the fingerprints stay what they are
        self._cards[card.server] = card
        self._proofs[card.server] = proof
        self._signatures[card.server] = _signature_fields(card)
        self._headers[card.server] = header
        self._tools[card.server] = prints
        self._states.pop(card.server, None)

    def _materialise(self, server: str) -> None:
        """Parse a pinned card: the same bytes as at load, the body the manifest signed."""
        pin = self._pending[server]
        self._admit(_parse_pinned(server, pin), pin.proof)
        self._pending.pop(server, None)

    def read_intact(self, server: str) -> Card:
        """``server``'s card, checked as :meth:`ensure_intact` checks it, not kept parsed.

        An index build reads each card it has to re-index once; keeping every
        pinned card's object graph afterwards was most of a rebuild's peak
        memory at 100k tools (issue 12). A card already parsed is re-checked
        in place.
        """
        pin = self._pending.get(server)
        if pin is None:
            return self.ensure_intact(server)
        card = _parse_pinned(server, pin)
        try:
            intact = body_digest(card.body) == pin.proof.digest
        except CardFormatError:
            intact = False
        if not intact:
            raise _not_intact(server)
        return card

    def __getitem__(self, server: str) -> Card:
        if server in self._pending:
            self._materialise(server)
        return self._cards[server]

    def __contains__(self, server: object) -> bool:
        return server in self._proofs

    def __iter__(self) -> Iterator[str]:
        return iter(self._proofs)

    def __len__(self) -> int:
        return len(self._proofs)

    def __repr__(self) -> str:
        return f"VerifiedCards({sorted(self._proofs)})"

    def ensure_intact(self, server: str) -> Card:
        """Return ``server``'s card after re-checking it against its verified digest.

        Raises :class:`SignatureError` (``card_not_intact``) if anything in the
        in-memory card changed since verification.
        """
        card = self._card(server)
        proof = self._proofs[server]
        try:
            intact = (
                _signature_fields(card) == self._signatures[server]
                and body_digest(card.body) == proof.digest
            )
        except CardFormatError:
            intact = False
        if not intact:
            raise _not_intact(server)
        return card

    def ensure_tool_intact(self, server: str, tool: str) -> ToolCard | None:
        """What one ``call`` serves, re-checked: the card's signature and header, and ``tool``.

        Returns the tool's card, or ``None`` when the verified card has no such
        tool. Cost grows with one tool's size, not the card's. Raises
        :class:`SignatureError` (``card_not_intact``) if the signature, the
        identity/capability/provenance, or that tool's entry changed since
        verification — including a tool that was not there when verified.
        """
        card = self._card(server)
        try:
            intact = _signature_fields(card) == self._signatures[server] and self._unchanged(
                server, None, card.body, self._headers[server]
            )
            entry = card.body.tool(tool)
            if intact and entry is not None:
                intact = self._unchanged(server, tool, entry, self._tools[server].get(tool))
        except (CardFormatError, ValueError, TypeError):  # not JSON any more: not intact
            intact = False
        if not intact:
            raise _not_intact(server)
        return entry

    def _unchanged(
        self, server: str, part: str | None, model: BaseModel, verified: str | None
    ) -> bool:
        """Whether the card's header (``part`` None) or tool ``part`` is as it was verified.

        The first time, its fingerprint is compared with the verified one (the value
        checks need not run again: that one was taken of a checked value, so equal
        text is an equal value). Once it matched, its :func:`_state` is kept, and
        later calls compare that instead: the same model in the same state serialises
        to the same bytes, so any change since (``object.__setattr__``, a schema dict
        edited in place, even keys reordered) is a mismatch, and a state never
        compared is never kept. pydantic's serialiser in Rust is about 5x cheaper
        than the fingerprint's dump, key sort and ``json.dumps``: this check was the
        largest of a pooled call's own steps.
        """
        exclude = {"tools"} if part is None else None
        now = _state(model, exclude)
        states = self._states.get(server)
        if states is not None and part in states:
            return states[part] == now
        if fingerprint(model, exclude=exclude, strict=False) != verified:
            return False
        self._states.setdefault(server, {})[part] = now
        return True

    def _card(self, server: str) -> Card:
        if server in self._pending:
            self._materialise(server)
        card = self._cards.get(server)
        if card is None:
            raise CardError(
                f"no verified card for server {server!r}; "
                f"run `cartograph bootstrap --server {server}`",
                code=codes.CARD_MISSING,
                server=server,
            )
        return card

    def reply(self, server: str, tool: str) -> ToolReply | None:
        """What ``discover`` serves of ``server``'s ``tool``; None when its card has no such tool.

        From the server's reply table when the signed manifest pins one (its
        hash checked when first read; no card parse), else from the card,
        re-checked as :meth:`ensure_tool_intact` checks it (P-SIG-3). A table
        that fails its check is logged (``reply_table_damaged``) and never
        used again: that server is answered from its card.
        """
        table = self._reply_table(server)
        if table is not None:
            return table.reply(tool)
        if self.ensure_tool_intact(server, tool) is None:
            return None
        return tool_reply(self[server], tool)

    def _reply_table(self, server: str) -> ReplyTable | None:
        with self._reply_lock:
            table = self._reply_tables.get(server)
            if table is not None:
                self._reply_tables.move_to_end(server)
                return table
            pin = self._reply_pins.get(server)
            if pin is None:
                return None
            try:
                table = read_reply_table(pin, server, self._proofs[server].digest)
            except CardError as exc:
                del self._reply_pins[server]
                _log.warning("%s (%s)", exc.message, exc.code)
                return None
            self._reply_tables[server] = table
            if len(self._reply_tables) > MAX_REPLY_TABLES:
                self._reply_tables.popitem(last=False)
            return table

    def summary(self, server: str) -> CardSummary:
        """Tool count, generator and creation time of ``server``'s card, from the manifest."""
        pin = self._pending.get(server)
        if pin is not None and pin.summary is not None:
            return pin.summary
        card = self[server]
        provenance = card.body.provenance
        return CardSummary(len(card.body.tools), provenance.generator, provenance.created_at)

    def signer(self, server: str) -> str:
        """Key id that signed ``server``'s card."""
        return self._proofs[server].key_id

    def digest(self, server: str) -> str:
        """SHA-256 of ``server``'s verified canonical card body."""
        return self._proofs[server].digest

    def proof(self, server: str) -> Verification:
        return self._proofs[server]

    def tool(self, server: str, tool: str) -> ToolCard | None:
        if server not in self._proofs:
            return None
        return self[server].tool(tool)

    def tool_count(self) -> int:
        return sum(len(self[server].body.tools) for server in self)

    def subset(self, servers: Iterable[str]) -> VerifiedCards:
        """The same verified cards restricted to ``servers`` (e.g. one catalog's).

        Copies the verification records and fingerprints instead of recomputing
        them: every card here already passed, and re-canonicalising all of them
        again was half of ``serve``'s start-up (issue 12).
        """
        wanted = set(servers)
        out = VerifiedCards()
        for name in (s for s in self._proofs if s in wanted):
            out._proofs[name] = self._proofs[name]
            if name in self._reply_pins:
                out._reply_pins[name] = self._reply_pins[name]
            if name in self._pending:
                out._pending[name] = self._pending[name]
                continue
            out._cards[name] = self._cards[name]
            out._signatures[name] = self._signatures[name]
            out._headers[name] = self._headers[name]
            out._tools[name] = self._tools[name]
        return out

    def merged(self, other: VerifiedCards) -> VerifiedCards:
        """Union of two verified sets; ``other`` wins on a shared server."""
        pairs = {s: (self[s], self._proofs[s]) for s in self}
        pairs.update({s: (other[s], other._proofs[s]) for s in other})
        return VerifiedCards(pairs.values())


# Strings up to this long are shared between cards (names, types, hashes, short
# descriptions); longer ones are almost always unique, so pooling them costs more.
_SHARED_STR_LEN = 80


class _SharedValues:
    """Makes equal parts of many verified cards one object: same value, less memory.

    At 100k tools the cards are most of a serving process's memory, and most
    of it is repetition: every pydantic instance carries its own set of field
    names (~730 bytes each, two per tool), and schema keys, JSON types and
    the drift pins of absent parts ("digest of null") recur in every tool.
    Compaction changes no value (fingerprints and canonical digests are
    identical before and after), so it runs after verification and before
    the integrity fingerprints are taken.
    """

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}
        self._field_sets: dict[tuple[type, frozenset[str]], set[str]] = {}

    def compact(self, model: BaseModel) -> None:
        fields = model.__pydantic_fields_set__
        key = (type(model), frozenset(fields))
        # pydantic copies this set in model_copy and never mutates a frozen
        # model's own, so equal sets can be one object.
        object.__setattr__(
            model, "__pydantic_fields_set__", self._field_sets.setdefault(key, set(fields))
        )
        values = model.__dict__
        for name, value in values.items():
            values[name] = self._value(value)

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._str(value)
        if isinstance(value, BaseModel):
            self.compact(value)
        elif isinstance(value, dict):
            items = [(self._str(k), self._value(v)) for k, v in value.items()]
            value.clear()
            value.update(items)
        elif isinstance(value, list):
            value[:] = [self._value(v) for v in value]
        elif isinstance(value, tuple):
            return tuple(self._value(v) for v in value)
        return value

    def _str(self, text: str) -> str:
        if type(text) is not str or len(text) > _SHARED_STR_LEN:
            return text
        return self._strings.setdefault(text, text)


def _parse_pinned(server: str, pin: PinnedCard) -> Card:
    """A pinned card's file parsed: still the bytes the manifest pins, naming its signer."""
    data = pin.read()
    if hashlib.sha256(data).hexdigest() != pin.file_sha256:
        raise SignatureError(
            f"the card file for {server!r} changed after start-up; restart the proxy "
            f"(or re-attest with `cartograph bootstrap --server {server}`)",
            code=codes.CARD_NOT_INTACT,
            server=server,
        )
    card = parse_card(data)
    if card.server != server or card.signature.key_id != pin.proof.key_id:
        raise SignatureError(
            f"card for {server!r} does not match its manifest entry; "
            f"re-attest with `cartograph bootstrap --server {server}`",
            code=codes.CARD_SERVER_MISMATCH,
            server=server,
        )
    return card


def _not_intact(server: str) -> SignatureError:
    return SignatureError(
        f"in-memory card for {server!r} changed after verification; refusing to serve it",
        code=codes.CARD_NOT_INTACT,
        server=server,
    )
