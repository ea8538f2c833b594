"""Rift over a configured federation or a snapshot: where the cards come from.

Rift analyses *verified* card text only. When the config's state directory
holds the operator's signed cards — the ones the proxy serves — those are
what Rift analyses, unless ``--catalog`` names a snapshot explicitly. A
snapshot (or a live federation without stored cards) is attested in memory
by the template generator, exactly as ``eval`` and ``discover --catalog`` do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cartograph.cards.model import Card
from cartograph.config.model import Config
from cartograph.index.embedders import get_embedder
from cartograph.rift.analysis import TextSource, analyse, make_embed_fn, tools_from_cards
from cartograph.rift.model import RiftReport, RiftSettings

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class CardSource:
    """Verified cards plus a label saying where they came from, for the report."""

    cards: Mapping[str, Card]
    origin: str


def settings_for(config: Config, *, paper: bool = False, **overrides: Any) -> RiftSettings:
    """Config's ``[rift]`` thresholds with CLI overrides (``None`` means "not given").

    ``paper`` starts from the paper's settings instead of the config's bands and probe.
    """
    base = config.rift.model_dump(exclude={"text"})
    if paper:
        base.update(RiftSettings.paper().model_dump(include={"probe", "high", "medium"}))
        base.update(actions=False, duplicates=False)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return RiftSettings.model_validate(base)


async def load_cards(config: Config, catalog_path: Path | None) -> CardSource:
    """The cards Rift analyses: stored operator cards, else a snapshot attested in memory."""
    from cartograph.cards.attest import attest_in_memory
    from cartograph.cards.store import load_stored_for_config

    if catalog_path is None:
        stored = load_stored_for_config(config, code="rift_no_verified_cards")
        if stored:
            return CardSource(stored, f"signed cards in {config.state_dir}")
    from cartograph.upstream.federation import load_catalog_for

    catalog = await load_catalog_for(config, catalog_path)
    origin = str(catalog_path or config.catalog or "live federation")
    return CardSource(attest_in_memory(catalog), f"template cards attested in memory ({origin})")


def run_rift(
    cards: Mapping[str, Card],
    settings: RiftSettings,
    *,
    embedder: str,
    text: TextSource = "description",
    state_dir: Path | None = None,
    progress: Progress | None = None,
) -> RiftReport:
    """Analyse ``cards`` with the named embedder, caching vectors under ``state_dir``."""
    model = get_embedder(embedder)
    cache = None
    if state_dir is not None:
        from cartograph.index.cache import EmbeddingCache

        cache = EmbeddingCache(state_dir)
    embed = make_embed_fn(model, cache=cache, progress=progress)
    tools = tools_from_cards(cards, text=text, probe=settings.probe)
    return analyse(tools, embed, settings, model_id=model.model_id)


__all__ = ["CardSource", "load_cards", "run_rift", "settings_for"]
