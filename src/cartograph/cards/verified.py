"""Verified cards: the only form in which cards leave the ``cards`` package.

A :class:`VerifiedCards` can only be built from :class:`Verification` results,
and it remembers each card's verified body digest. Cards are frozen pydantic
models, but their schema dicts are still mutable Python objects; so before
anything serves a card (``discover``, ``call``) it calls :meth:`ensure_intact`,
which re-canonicalises the in-memory card and compares digests (P-SIG-3).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from cartograph.cards.model import Card, Signature, ToolCard
from cartograph.cards.signing import Verification, body_digest
from cartograph.errors import CardError, SignatureError


class VerifiedCards(Mapping[str, Card]):
    """Server name → verified :class:`Card`, plus who signed each and its digest."""

    def __init__(self, verified: Iterable[tuple[Card, Verification]] = ()) -> None:
        self._cards: dict[str, Card] = {}
        self._proofs: dict[str, Verification] = {}
        self._signatures: dict[str, Signature] = {}
        for card, proof in verified:
            if proof.server != card.server or proof.digest != body_digest(card.body):
                raise SignatureError(
                    f"card for {card.server!r} does not match its verification record",
                    code="card_not_intact",
                    server=card.server,
                )
            self._cards[card.server] = card
            self._proofs[card.server] = proof
            self._signatures[card.server] = card.signature

    def __getitem__(self, server: str) -> Card:
        return self._cards[server]

    def __iter__(self) -> Iterator[str]:
        return iter(self._cards)

    def __len__(self) -> int:
        return len(self._cards)

    def __repr__(self) -> str:
        return f"VerifiedCards({sorted(self._cards)})"

    def ensure_intact(self, server: str) -> Card:
        """Return ``server``'s card after re-checking it against its verified digest.

        Raises :class:`SignatureError` (``card_not_intact``) if anything in the
        in-memory card changed since verification.
        """
        card = self._cards.get(server)
        if card is None:
            raise CardError(
                f"no verified card for server {server!r}; "
                f"run `cartograph bootstrap --server {server}`",
                code="card_missing",
                server=server,
            )
        proof = self._proofs[server]
        if card.signature != self._signatures[server] or body_digest(card.body) != proof.digest:
            raise SignatureError(
                f"in-memory card for {server!r} changed after verification; refusing to serve it",
                code="card_not_intact",
                server=server,
            )
        return card

    def signer(self, server: str) -> str:
        """Key id that signed ``server``'s card."""
        return self._proofs[server].key_id

    def digest(self, server: str) -> str:
        """SHA-256 of ``server``'s verified canonical card body."""
        return self._proofs[server].digest

    def proof(self, server: str) -> Verification:
        return self._proofs[server]

    def tool(self, server: str, tool: str) -> ToolCard | None:
        card = self._cards.get(server)
        return None if card is None else card.tool(tool)

    def tool_count(self) -> int:
        return sum(len(card.body.tools) for card in self._cards.values())

    def subset(self, servers: Iterable[str]) -> VerifiedCards:
        """The same verified cards restricted to ``servers`` (e.g. one catalog's)."""
        wanted = set(servers)
        return VerifiedCards((self._cards[s], self._proofs[s]) for s in self._cards if s in wanted)

    def merged(self, other: VerifiedCards) -> VerifiedCards:
        """Union of two verified sets; ``other`` wins on a shared server."""
        pairs = {s: (self._cards[s], self._proofs[s]) for s in self._cards}
        pairs.update({s: (other._cards[s], other._proofs[s]) for s in other._cards})
        return VerifiedCards(pairs.values())
