"""Bootstrap: attest a federation's catalog into the card store.

For each server: if its current card verifies under the operator's key and
was made from the same upstream state (server digest), the same generator
and the same overrides, it is left alone — byte for byte. Otherwise the
generator writes new text, the card gets the next version (above both the
old card and the accepted-version record), is signed, verified, and written
atomically. The whole run is one :meth:`CardStore.batch`: the accepted-version
record (which lists every server) is read once and written once, after the
cards — not once per card, which was quadratic at thousands of servers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from cartograph.cards.attest import build_body, identity_for
from cartograph.cards.digest import server_digest
from cartograph.cards.generators.base import CardGenerator, ServerText
from cartograph.cards.keys import SigningKey
from cartograph.cards.listings import save_listing
from cartograph.cards.model import Card
from cartograph.cards.overrides import Overrides
from cartograph.cards.signing import sign_card, verify_card
from cartograph.cards.store import CardStore
from cartograph.cards.transforms import Reshaped, reshape_server, served_server
from cartograph.cards.trust import TrustSet
from cartograph.catalog.model import Catalog, ServerDef
from cartograph.config.model import ServerConfig
from cartograph.errors import CardError

Outcome = Literal["unchanged", "written", "failed"]


@dataclass(frozen=True)
class ServerOutcome:
    server: str
    outcome: Outcome
    version: int = 0
    tools: int = 0
    reason: str = ""


@dataclass(frozen=True)
class BootstrapResult:
    outcomes: tuple[ServerOutcome, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for o in self.outcomes if o.outcome == outcome)


def attest_catalog(
    catalog: Catalog,
    *,
    store: CardStore,
    key: SigningKey,
    generator: CardGenerator,
    overrides: Overrides | None = None,
    configs: Mapping[str, ServerConfig] | None = None,
    only: Collection[str] | None = None,
    progress: Callable[[str], None] | None = None,
    trust: TrustSet | None = None,
) -> BootstrapResult:
    """Write a fresh signed card for every changed server in ``catalog``.

    Then re-sign the card manifest over every card in the store that verifies
    under ``trust`` (default: ``key`` alone), which is what start-up trusts
    (:mod:`cartograph.cards.manifest`).
    """
    from cartograph.cards.manifest import write_manifest

    with store.batch():
        result = _attest(
            catalog,
            store=store,
            key=key,
            generator=generator,
            overrides=overrides or Overrides(),
            configs=configs or {},
            only=only,
            progress=progress,
        )
    write_manifest(store, key, trust)
    return result


def _attest(
    catalog: Catalog,
    *,
    store: CardStore,
    key: SigningKey,
    generator: CardGenerator,
    overrides: Overrides,
    configs: Mapping[str, ServerConfig],
    only: Collection[str] | None,
    progress: Callable[[str], None] | None,
) -> BootstrapResult:
    own = TrustSet.of(key.public)
    servers = [s for s in catalog.servers if only is None or s.name in only]
    stale = [s for s in servers if not _current(store, own, s, generator, overrides, configs)]
    reshaped = {s.name: reshape_server(s, overrides.tools_of(s.name)) for s in stale}
    served = [served_server(s, reshaped[s.name]) for s in stale]
    texts = generator.describe_all(served, progress=progress) if stale else {}
    outcomes = []
    for server in servers:
        if server.name not in texts:
            save_listing(store.root, server)  # unchanged: this listing is the attested one
            outcomes.append(
                ServerOutcome(
                    server.name, "unchanged", _version(store, server.name), len(server.tools)
                )
            )
            if progress is not None:
                progress(server.name)
            continue
        shape = Shape(texts[server.name], reshaped[server.name])
        outcomes.append(_write(store, key, server, shape, generator, overrides, configs))
    return BootstrapResult(tuple(outcomes))


@dataclass(frozen=True)
class Shape:
    """One server's generated text (keyed by served tool names) and its tools as served."""

    text: ServerText
    reshaped: Mapping[str, Reshaped]


def _write(
    store: CardStore,
    key: SigningKey,
    server: ServerDef,
    shape: Shape,
    generator: CardGenerator,
    overrides: Overrides,
    configs: Mapping[str, ServerConfig],
) -> ServerOutcome:
    version = max(_version(store, server.name), store.accepted_version(server.name)) + 1
    body = build_body(
        server,
        shape.text,
        generator.info,
        version=version,
        identity=identity_for(server, configs.get(server.name)),
        overrides_digest=overrides.digest(server.name),
        reshaped=shape.reshaped,
    )
    card = sign_card(body, key)
    verify_card(card, TrustSet.of(key.public), expected_server=server.name)
    store.write(card)
    save_listing(store.root, server)  # the text behind the pins, for `cards diff`
    return ServerOutcome(server.name, "written", version, len(server.tools))


def _existing(store: CardStore, own: TrustSet, server: str) -> Card | None:
    try:
        card, _ = store.verify_one(server, own)
    except CardError:
        return None
    return card


def _version(store: CardStore, server: str) -> int:
    try:
        return store.read(server).version
    except CardError:
        return 0


def _current(
    store: CardStore,
    own: TrustSet,
    server: ServerDef,
    generator: CardGenerator,
    overrides: Overrides,
    configs: Mapping[str, ServerConfig],
) -> bool:
    card = _existing(store, own, server.name)
    if card is None:
        return False
    prov = card.body.provenance
    info = generator.info
    return (
        prov.server_digest == server_digest(server)
        and (prov.generator, prov.generator_version, prov.model)
        == (info.name, info.version, info.model)
        and prov.overrides_digest == overrides.digest(server.name)
        and card.body.identity == identity_for(server, configs.get(server.name))
    )
