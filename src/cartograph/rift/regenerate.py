"""``rift --regenerate``: give REGENERATE tools a distinguishing statement and re-sign.

Layer 3's REGENERATE diagnosis says a tool's card text has no word of its
own. The fix is one plain statement of what the tool does that its nearest
rival does not, built from facts the publisher already states — the words of
its *name* the rival's name lacks, else its arguments the rival lacks (never
publisher prose) — placed before the attested description.

Rules that make it safe to run in CI and twice in a row:

* a tool is rewritten only when the statement gives it a word no other member
  of its cluster uses (re-checked against the other members' *new* texts);
  otherwise it is left alone and listed as needing a merge or an override;
* a card is re-signed (version + 1) only when some tool's text changed: an
  unchanged card is never bumped;
* the card keeps its provenance (generator, overrides digest), so a later
  ``cartograph bootstrap`` of an unchanged server keeps the amended text;
* a second run finds no REGENERATE tool it can change, and changes nothing;
* a name-only copy (:mod:`cartograph.rift.copies`) is never rewritten: its
  name and arguments are exactly what it shares with its copies, so only a
  written override separates it; it is listed.

Each rewrite is shown as a before/after diff.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cartograph import error_codes as codes
from cartograph.cards.generators.base import GeneratorInfo, ServerText, ToolText
from cartograph.cards.model import Card, ToolCard
from cartograph.catalog.model import Catalog
from cartograph.config.model import Config
from cartograph.errors import CardError
from cartograph.rift.diagnosis import name_statement
from cartograph.rift.model import Cluster, Member, RiftReport
from cartograph.rift.tokens import Vocabulary, token_key, words


@dataclass(frozen=True)
class Rewrite:
    server: str
    tool: str
    before: str
    after: str

    def diff(self) -> list[str]:
        return [f"  {self.server}/{self.tool}", f"    - {self.before}", f"    + {self.after}"]


@dataclass
class RegenerateOutcome:
    rewrites: list[Rewrite] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    """REGENERATE tools no statement can separate (merge them, or write an override)."""

    def lines(self) -> list[str]:
        if not self.rewrites and not self.unresolved:
            return ["regenerate: no tool is diagnosed REGENERATE; nothing to rewrite."]
        out = [
            f"regenerate: rewrote {len(self.rewrites)} tool description(s), "
            f"re-signed {len(self.versions)} card(s)"
        ]
        for r in self.rewrites:
            out.extend(r.diff())
        for server, version in sorted(self.versions.items()):
            out.append(f"  card {server} → version {version}")
        for key in self.unresolved:
            out.append(
                f"  {key}: no statement from its name or arguments separates it; merge it "
                "with its rival or write a card override (see the report's suggestion)"
            )
        return out


def planned_rewrites(
    report: RiftReport, texts: Mapping[str, str], argument_names: Mapping[str, Sequence[str]]
) -> tuple[list[Rewrite], list[str]]:
    """New descriptions for REGENERATE members that a statement can separate, and the rest.

    ``texts`` and ``argument_names`` are keyed ``server/tool`` (the attested card text).
    """
    rewrites: list[Rewrite] = []
    unresolved: list[str] = []
    twins = {frozenset(d.servers) for d in report.duplicates}
    for c in report.clusters:
        if c.duplicate or not c.regenerate:
            continue
        done, stuck = _cluster_rewrites(c, texts, argument_names, twins)
        rewrites.extend(done)
        unresolved.extend(stuck)
    return rewrites, unresolved


def _rivals(m: Member, o: Member, twins: set[frozenset[str]]) -> bool:
    """``o`` competes with ``m``: another tool, and not its twin on a duplicate server."""
    return o.key != m.key and not (o.tool == m.tool and {o.server, m.server} in twins)


def _cluster_rewrites(
    c: Cluster,
    texts: Mapping[str, str],
    argument_names: Mapping[str, Sequence[str]],
    twins: set[frozenset[str]],
) -> tuple[list[Rewrite], list[str]]:
    vocabulary = Vocabulary()
    rivals = {m.key: [o.key for o in c.members if _rivals(m, o, twins)] for m in c.members}
    proposed: dict[str, str] = {}
    # A name-only copy differs from its copies by its name alone, and a statement
    # made of its name or arguments is taken out when copies are compared: only a
    # written override can separate it, so it is never rewritten here.
    for m in (m for m in c.regenerate if not m.copies):
        taken = _tokens((texts[k] for k in rivals[m.key]), vocabulary)
        statement = _statement(m, argument_names.get(m.key, ()), taken)
        if statement:
            proposed[m.key] = f"{statement} {texts[m.key]}".strip()
    after = {m.key: proposed.get(m.key, texts[m.key]) for m in c.members}
    done: list[Rewrite] = []
    stuck: list[str] = []
    for m in c.regenerate:
        new = proposed.get(m.key)
        mine = vocabulary.tokens(after[m.key])
        if new is not None and mine - _tokens((after[k] for k in rivals[m.key]), vocabulary):
            done.append(Rewrite(m.server, m.tool, texts[m.key], new))
        else:
            stuck.append(m.key)
    return done, stuck


def _statement(m: Member, argument_names: Sequence[str], taken: frozenset[str]) -> str:
    """A sentence of the tool's own name words (else argument names) no rival's text uses."""
    if _fresh(words(m.tool), taken):
        return name_statement(m.tool)
    if _fresh([w for a in argument_names for w in words(a)], taken):
        return f"Takes {', '.join(argument_names[:6])}."
    return ""


def _fresh(candidates: Iterable[str], taken: frozenset[str]) -> tuple[str, ...]:
    out: list[str] = []
    for w in candidates:
        if token_key(w) not in taken and w not in out:
            out.append(w)
    return tuple(out)


def _tokens(texts: Iterable[str], vocabulary: Vocabulary) -> frozenset[str]:
    found: set[str] = set()
    for text in texts:
        found |= vocabulary.tokens(text)
    return frozenset(found)


def _tool_text(tool: ToolCard, description: str) -> ToolText:
    return ToolText(
        description=description,
        arguments=tool.arguments,
        example=dict(tool.example),
        input_schema=dict(tool.input_schema),
        when_to_use=tool.when_to_use,
        synonyms=tool.synonyms,
        examples=tool.examples,
    )


def amended_text(card: Card, new: Mapping[str, str]) -> ServerText:
    """The card's attested text with ``new`` descriptions (by tool name) swapped in."""
    tools = {t.name: _tool_text(t, new.get(t.name, t.description)) for t in card.body.tools}
    return ServerText(capability=card.body.capability, tools=tools)


def regenerate_tools(config: Config, report: RiftReport) -> RegenerateOutcome:
    """Rewrite what a statement can separate, re-sign only cards whose text changed."""
    outcome = RegenerateOutcome()
    if not any(c.regenerate for c in report.clusters):
        return outcome
    from cartograph.cards.attest import build_body
    from cartograph.cards.keys import load_private_key
    from cartograph.cards.loading import load_verified_for_config
    from cartograph.cards.paths import key_path
    from cartograph.cards.signing import sign_card, verify_card
    from cartograph.cards.store import CardStore
    from cartograph.cards.transforms import reshaped_from_card
    from cartograph.cards.trust import TrustSet

    wanted = {m.server for c in report.clusters for m in c.regenerate}
    cards = load_verified_for_config(config)
    missing = sorted(s for s in wanted if s not in cards)
    if missing:
        raise CardError(
            f"--regenerate rewrites the operator's signed cards, but {missing[:3]} have none in "
            f"{config.state_dir}; run `cartograph bootstrap` first (a --catalog snapshot is "
            "attested in memory and cannot be re-signed)",
            code=codes.RIFT_REGENERATE_NEEDS_CARDS,
        )
    texts = {f"{s}/{t.name}": t.description for s, c in cards.items() for t in c.body.tools}
    arguments = {
        f"{s}/{t.name}": tuple(str(k) for k in t.input_schema.get("properties", {}) or {})
        for s, c in cards.items()
        for t in c.body.tools
    }
    rewrites, outcome.unresolved = planned_rewrites(report, texts, arguments)
    changed = [r for r in rewrites if r.after != r.before]
    if not changed:
        return outcome
    catalog = _catalog(config)
    key = load_private_key(key_path(config))
    store = CardStore(config.state_dir)
    for server_name in sorted({r.server for r in changed}):
        card = cards[server_name]
        server = catalog.server(server_name)
        if server is None:
            raise CardError(
                f"server {server_name!r} is not in the federation now; cannot regenerate its card",
                code=codes.RIFT_REGENERATE_UNKNOWN_SERVER,
            )
        new = {r.tool: r.after for r in changed if r.server == server_name}
        prov = card.body.provenance
        body = build_body(
            server,
            amended_text(card, new),
            GeneratorInfo(name=prov.generator, version=prov.generator_version, model=prov.model),
            version=max(card.version, store.accepted_version(server_name)) + 1,
            identity=card.body.identity,
            overrides_digest=prov.overrides_digest,
            reshaped=reshaped_from_card(card.body),
        )
        signed = sign_card(body, key)
        verify_card(signed, TrustSet.of(key.public), expected_server=server_name)
        store.write(signed)
        outcome.versions[server_name] = body.provenance.card_version
    from cartograph.cards.manifest import write_manifest
    from cartograph.cards.paths import trust_path
    from cartograph.cards.trust import load_trust

    write_manifest(store, key, load_trust(trust_path(config)))  # start-up serves only these
    outcome.rewrites = changed
    return outcome


def _catalog(config: Config) -> Catalog:
    import anyio

    from cartograph.upstream.federation import load_catalog_for

    catalog: Catalog = anyio.run(load_catalog_for, config, None)
    return catalog


__all__ = ["RegenerateOutcome", "Rewrite", "amended_text", "planned_rewrites", "regenerate_tools"]
