"""Where stub generation gets its cards, and which tools it may cover.

- With ``--catalog`` (or ``catalog`` in the config) the snapshot is attested
  in memory, exactly as ``eval``, ``discover --catalog`` and ``rift`` do.
- Otherwise the operator's signed cards in the state directory are loaded
  (the live federation is attested in memory only with
  ``--unsafe-throwaway-key``; without cards and without it, the serving-state
  error names the command that fixes it — never a throwaway key silently),
  and the live federation is listed so drifted, unattested or vanished tools
  are withheld: a stub must never promise a tool the proxy would refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cartograph import error_codes as codes
from cartograph.cards.drift import DriftReport, check_drift
from cartograph.cards.verified import VerifiedCards
from cartograph.config.model import Config
from cartograph.index.discover import DiscoverResult

Notify = Callable[[str], None]


@dataclass(frozen=True)
class StubSource:
    cards: VerifiedCards
    drift: DriftReport
    origin: str


async def load_stub_source(
    config: Config,
    catalog_path: Path | None,
    *,
    notify: Notify | None = None,
    unsafe_throwaway_key: bool = False,
) -> StubSource:
    """Verified cards plus the drift of the federation they describe."""
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.cards.loading import load_stored_for_config, require_serving_state
    from cartograph.upstream.federation import load_catalog_for

    say = notify or (lambda _message: None)
    snapshot = catalog_path or config.catalog
    stored = (
        None
        if snapshot is not None
        else load_stored_for_config(config, code=codes.STUBS_NO_VERIFIED_CARDS)
    )
    if snapshot is None and stored is None and not unsafe_throwaway_key:
        require_serving_state(config)  # the state dir holds no card: this raises
    say("listing the federation's tools…" if snapshot is None else f"reading {snapshot}…")
    catalog = await load_catalog_for(config, catalog_path)
    if stored is not None:
        return StubSource(
            stored, check_drift(stored, catalog), f"signed cards in {config.state_dir}"
        )
    cards = attest_with_unsafe_throwaway_key(catalog)
    origin = str(snapshot) if snapshot is not None else "the live federation"
    return StubSource(
        cards, check_drift(cards, catalog), f"template cards attested in memory ({origin})"
    )


def discovered(
    source: StubSource, config: Config, task: str, k: int, *, embedder: str | None = None
) -> DiscoverResult:
    """The top-k tools for ``task`` over the exposed tools (progressive disclosure for code)."""
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.discover import discover
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    index = ToolIndex.build(
        source.cards,
        get_embedder(embedder or config.index.embedder),
        cache=EmbeddingCache(config.state_dir),
        exclude={(e.server, e.tool) for e in source.drift if not e.exposed},
        default_method=config.index.ranker,
        pooled_steps=config.index.pooled_steps,
    )
    return discover(index, source.cards, task, k=k)
