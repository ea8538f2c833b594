"""Rift over a configured federation or a snapshot: where the cards come from.

Rift analyses *verified* card text only. When the config's state directory
holds the operator's signed cards — the ones the proxy serves — those are
what Rift analyses, unless ``--catalog`` names a snapshot explicitly. A
snapshot (``--catalog`` or ``config.catalog``) is attested in memory by the
template generator, exactly as ``eval`` and ``discover --catalog`` do. The live
federation is attested in memory only when asked (``--unsafe-throwaway-key``):
without stored cards Rift otherwise raises the serving-state error naming the
command that fixes it (issue 12: never a throwaway key silently).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cartograph import error_codes as codes
from cartograph.cards.model import Card
from cartograph.config.model import Config
from cartograph.index.embedders import get_embedder
from cartograph.rift.analysis import TextSource, analyse, make_embed_fn, tools_from_cards
from cartograph.rift.model import RiftReport, RiftSettings
from cartograph.rift.names import with_nameless

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class CardSource:
    """Verified cards plus a label saying where they came from, for the report."""

    cards: Mapping[str, Card]
    origin: str
    exclude: frozenset[str] = frozenset()
    """``server/tool`` keys the proxy would not serve (disabled server, ``deny`` rule)."""


def unserved(config: Config, cards: Mapping[str, Card]) -> frozenset[str]:
    """Tools no catalog serves: their server is disabled or absent, or every policy denies them.

    Rift rates what agents can be shown, so the fixes it suggests (disable a
    duplicate server, add a ``deny`` rule) clear the finding on the next run.
    """
    from cartograph.config.model import CatalogConfig
    from cartograph.index.serving import policy_allows

    declared = config.catalogs or (CatalogConfig(name="default"),)
    enabled = {s.name for s in config.enabled_servers}

    def members(cat: CatalogConfig) -> set[str] | None:
        if not config.servers:  # a snapshot-only config: the catalog's own list, or everything
            return set(cat.servers) or None
        return {n for n in cat.servers if n in enabled} if cat.servers else enabled

    groups = [(members(cat), cat.policy) for cat in declared]
    out: set[str] = set()
    for server, card in cards.items():
        for tool in card.body.tools:
            served = any(
                (names is None or server in names) and policy_allows(policy, server, tool.name)
                for names, policy in groups
            )
            if not served:
                out.add(f"{server}/{tool.name}")
    return frozenset(out)


def settings_for(config: Config, *, paper: bool = False, **overrides: Any) -> RiftSettings:
    """Config's ``[rift]`` thresholds with CLI overrides (``None`` means "not given").

    ``paper`` starts from the paper's settings instead of the config's bands and probe.
    """
    base = config.rift.model_dump(exclude={"text"})
    if paper:
        base.update(RiftSettings.paper().model_dump(include={"probe", "high", "medium"}))
        base.update(actions=False, duplicates=False, identical=False, copies=False)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return RiftSettings.model_validate(base)


async def load_cards(
    config: Config, catalog_path: Path | None, *, unsafe_throwaway_key: bool = False
) -> CardSource:
    """The cards Rift analyses: stored operator cards, else a snapshot attested in memory.

    The live federation is attested in memory only with ``unsafe_throwaway_key``;
    otherwise no stored cards raise ``no_servers`` / ``no_trust`` / ``no_cards``.
    """
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.cards.loading import load_stored_for_config, require_serving_state

    if catalog_path is None:
        stored = load_stored_for_config(config, code=codes.RIFT_NO_VERIFIED_CARDS)
        if stored:
            return _served(config, stored, f"signed cards in {config.state_dir}")
        if config.catalog is None and not unsafe_throwaway_key:
            require_serving_state(config)  # the state dir holds no card: this raises
    from cartograph.upstream.federation import load_catalog_for

    catalog = await load_catalog_for(config, catalog_path)
    origin = str(catalog_path or config.catalog or "live federation")
    cards = attest_with_unsafe_throwaway_key(catalog)
    return _served(config, cards, f"template cards attested in memory ({origin})")


def _served(config: Config, cards: Mapping[str, Card], origin: str) -> CardSource:
    exclude = unserved(config, cards)
    if exclude:
        origin += f"; {len(exclude)} tool(s) left out: not served (disabled server or deny rule)"
    return CardSource(cards, origin, exclude)


def run_rift(
    cards: Mapping[str, Card],
    settings: RiftSettings,
    *,
    embedder: str,
    text: TextSource = "description",
    state_dir: Path | None = None,
    progress: Progress | None = None,
    exclude: frozenset[str] = frozenset(),
) -> RiftReport:
    """Analyse ``cards`` with the named embedder, caching vectors under ``state_dir``."""
    model = get_embedder(embedder)
    cache = None
    if state_dir is not None:
        from cartograph.index.cache import EmbeddingCache

        cache = EmbeddingCache(state_dir)
    embed = make_embed_fn(model, cache=cache, progress=progress)
    tools = tools_from_cards(cards, text=text, probe=settings.probe)
    tools = [t for t in tools if t.key not in exclude]
    report = analyse(tools, embed, settings, model_id=model.model_id)
    names = tuple(with_nameless(report.names, cards))
    return report.model_copy(update={"names": names})


__all__ = ["CardSource", "load_cards", "run_rift", "settings_for", "unserved"]
