"""``rift --regenerate``: rewrite REGENERATE tools' text and re-sign their cards.

Layer 3's REGENERATE diagnosis says a tool's card text has no word of its
own. The fix belongs to the operator's card generator, so this module hands
exactly those tools back to the *configured* generator (template or LLM),
keeps every other tool's attested text as it is, and signs the new card with
the operator key through the cards package (version + 1, atomic write).

A deterministic generator may write the same words again. Then the tool is
still indistinct, and the words Rift found that separate it (from its own
name and arguments, never from publisher prose) are appended as one plain
clause, so the regenerated card actually resolves the diagnosis. Each such
amendment is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from cartograph.cards.generators.base import CardGenerator, ServerText, ToolText
from cartograph.cards.model import Card
from cartograph.catalog.model import Catalog, ServerDef
from cartograph.config.model import Config
from cartograph.errors import CardError
from cartograph.rift.model import Cluster, RiftReport
from cartograph.rift.tokens import Vocabulary


@dataclass(frozen=True)
class Rewrite:
    server: str
    tool: str
    before: str
    after: str
    amended: bool
    """True when Rift's separating words had to be appended to the generator's text."""


@dataclass
class RegenerateOutcome:
    rewrites: list[Rewrite] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        if not self.rewrites:
            return ["regenerate: no tool is diagnosed REGENERATE; nothing to rewrite."]
        out = [
            f"regenerate: re-signed {len(self.versions)} card(s), "
            f"rewrote {len(self.rewrites)} tool description(s)"
        ]
        for r in self.rewrites:
            tag = " (+ Rift's separating words)" if r.amended else ""
            out.append(f"  {r.server}/{r.tool}{tag}: {r.after}")
        for server, version in sorted(self.versions.items()):
            out.append(f"  card {server} → version {version}")
        return out


def targets(report: RiftReport) -> dict[str, dict[str, Cluster]]:
    """server → tool → its cluster, for every member diagnosed REGENERATE."""
    found: dict[str, dict[str, Cluster]] = {}
    for c in report.clusters:
        for m in c.regenerate:
            found.setdefault(m.server, {})[m.tool] = c
    return found


def rewrite_server(
    card: Card,
    server: ServerDef,
    generator: CardGenerator,
    wanted: Mapping[str, Cluster],
    texts_of_others: Mapping[str, str],
) -> tuple[ServerText, list[Rewrite]]:
    """New operator text for ``server``: regenerated for ``wanted`` tools, kept for the rest."""
    fresh = generator.describe(server)
    tools: dict[str, ToolText] = {}
    rewrites: list[Rewrite] = []
    for attested in card.body.tools:
        old = ToolText(
            description=attested.description,
            arguments=attested.arguments,
            example=dict(attested.example),
            input_schema=dict(attested.input_schema),
            when_to_use=attested.when_to_use,
            synonyms=attested.synonyms,
            examples=attested.examples,
        )
        if attested.name not in wanted or attested.name not in fresh.tools:
            tools[attested.name] = old
            continue
        cluster = wanted[attested.name]
        new = fresh.tools[attested.name]
        rivals = [texts_of_others[m.key] for m in cluster.members if m.tool != attested.name]
        description, amended = _ensure_distinct(new.description, rivals, cluster, attested.name)
        tools[attested.name] = replace(new, description=description)
        rewrites.append(
            Rewrite(card.server, attested.name, attested.description, description, amended)
        )
    return ServerText(capability=card.body.capability, tools=tools), rewrites


def _ensure_distinct(
    description: str, rivals: Iterable[str], cluster: Cluster, tool: str
) -> tuple[str, bool]:
    vocabulary = Vocabulary()
    mine = vocabulary.tokens(description)
    theirs: set[str] = set()
    for text in rivals:
        theirs |= vocabulary.tokens(text)
    if mine - theirs:
        return description, False
    words = next((s.words for s in cluster.suggestions if s.tool == tool and s.words), ())
    if not words:
        return description, False
    clause = "Specifically: " + ", ".join(words) + "."
    return f"{description.rstrip()} {clause}".strip(), True


def regenerate_tools(config: Config, report: RiftReport) -> RegenerateOutcome:
    """Rewrite every REGENERATE tool's card through the configured generator and re-sign it."""
    wanted = targets(report)
    outcome = RegenerateOutcome()
    if not wanted:
        return outcome
    from cartograph.cards.attest import build_body
    from cartograph.cards.keys import load_private_key
    from cartograph.cards.signing import sign_card, verify_card
    from cartograph.cards.store import CardStore, key_path, load_verified_for_config
    from cartograph.cards.trust import TrustSet

    cards = load_verified_for_config(config)
    missing = sorted(s for s in wanted if s not in cards)
    if missing:
        raise CardError(
            f"--regenerate rewrites the operator's signed cards, but {missing[:3]} have none in "
            f"{config.state_dir}; run `cartograph bootstrap` first (a --catalog snapshot is "
            "attested in memory and cannot be re-signed)",
            code="rift_regenerate_needs_cards",
        )
    catalog = _catalog(config)
    generator = _generator(config)
    key = load_private_key(key_path(config))
    store = CardStore(config.state_dir)
    texts = {f"{s}/{t.name}": t.description for s, c in cards.items() for t in c.body.tools}
    for server_name, tools in sorted(wanted.items()):
        card = cards[server_name]
        server = catalog.server(server_name)
        if server is None:
            raise CardError(
                f"server {server_name!r} is not in the federation now; cannot regenerate its card",
                code="rift_regenerate_unknown_server",
            )
        text, rewrites = rewrite_server(card, server, generator, tools, texts)
        body = build_body(
            server,
            text,
            generator.info,
            version=max(card.version, store.accepted_version(server_name)) + 1,
            identity=card.body.identity,
            overrides_digest=card.body.provenance.overrides_digest,
        )
        signed = sign_card(body, key)
        verify_card(signed, TrustSet.of(key.public), expected_server=server_name)
        store.write(signed)
        outcome.rewrites.extend(rewrites)
        outcome.versions[server_name] = body.provenance.card_version
    from cartograph.cards.manifest import write_manifest
    from cartograph.cards.store import trust_path
    from cartograph.cards.trust import load_trust

    write_manifest(store, key, load_trust(trust_path(config)))  # start-up serves only these
    return outcome


def _catalog(config: Config) -> Catalog:
    import anyio

    from cartograph.upstream.federation import load_catalog_for

    catalog: Catalog = anyio.run(load_catalog_for, config, None)
    return catalog


def _generator(config: Config) -> CardGenerator:
    """The configured generator with the operator's overrides, as ``bootstrap`` builds it."""
    from cartograph.cards.generators.llm import LLMGenerator
    from cartograph.cards.generators.template import TemplateGenerator
    from cartograph.cards.overrides import OverridingGenerator, load_overrides

    base: CardGenerator = (
        LLMGenerator(config.cards.llm) if config.cards.generator == "llm" else TemplateGenerator()
    )
    return OverridingGenerator(base, load_overrides(config.cards.overrides))


__all__ = ["RegenerateOutcome", "Rewrite", "regenerate_tools", "rewrite_server", "targets"]
