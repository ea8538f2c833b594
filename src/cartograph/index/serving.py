"""The serving index: what `serve` and `cartograph discover` both rank over.

One definition of "the operator's catalog, as served": the verified cards of
the configured servers (raising, with the command that fixes it, when there
is nothing to serve), the configured embedder through the state directory's
embedding cache, and the tools to leave out (drifted, missing, unattested or
denied by the catalog's policy). :class:`~cartograph.server.runtime.catalog.CatalogRuntime`
builds its index through here, and so does the command line, which must not
pay for the MCP SDK just to rank cards (issue 12).
"""

from __future__ import annotations

import fnmatch
import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cartograph import error_codes as codes

if TYPE_CHECKING:
    from cartograph.cards.drift import DriftReport
    from cartograph.cards.verified import VerifiedCards
    from cartograph.config.model import CatalogPolicy, Config
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.embedders.base import Embedder
    from cartograph.index.tool_index import ToolIndex

ToolKey = tuple[str, str]
_log = logging.getLogger(__name__)


def policy_allows(policy: CatalogPolicy, server: str, tool: str) -> bool:
    """Allow/deny globs match ``server/tool``; deny wins."""
    name = f"{server}/{tool}"
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in policy.deny):
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in policy.allow)


def tool_allowed(policy: CatalogPolicy, server: str, names: Iterable[str]) -> bool:
    """:func:`policy_allows` for a tool known by several names (served and upstream).

    Denied when any name is denied (a client file's ``disabledTools`` name the
    upstream's); allowed when any name is allowed.
    """
    full = [f"{server}/{name}" for name in names]
    if any(fnmatch.fnmatchcase(n, p) for n in full for p in policy.deny):
        return False
    return any(fnmatch.fnmatchcase(n, p) for n in full for p in policy.allow)


def serving_cards(config: Config, servers: Iterable[str]) -> VerifiedCards:
    """The operator's verified cards for ``servers``; raises when there is nothing to serve.

    Cards that fail verification are logged and left out; when *none* of the
    configured servers' cards verifies, that is an error too (e.g. every card is
    in an older format), not an empty catalog.
    """
    return serving_cards_and_failures(config, servers)[0]


def serving_cards_and_failures(
    config: Config, servers: Iterable[str]
) -> tuple[VerifiedCards, dict[str, str]]:
    """:func:`serving_cards`, plus each refused card's error code (``status`` shows it)."""
    from cartograph.cards.loading import load_report_for_config, require_serving_state
    from cartograph.errors import CardError

    require_serving_state(config)
    report = load_report_for_config(config)
    for server, exc in report.failures.items():
        _log.warning("card for %s not loaded (%s): %s", server, exc.code, exc.message)
    cards = report.verified.subset(servers)
    if not cards:
        raise CardError(
            f"no card in {config.state_dir} verified for these servers; run "
            "`cartograph cards verify` to see why (then `cartograph bootstrap`)",
            code=codes.NO_VERIFIED_CARDS,
        )
    return cards, {server: exc.code for server, exc in report.failures.items()}


def excluded_tools(
    cards: VerifiedCards, drift: DriftReport, policy: CatalogPolicy
) -> frozenset[ToolKey]:
    """Carded tools that must not be discoverable: drifted, missing, or denied by policy.

    Under a policy that allows every tool, only the cards of servers with a
    hidden drift entry are read: the others may not even be parsed yet
    (:meth:`VerifiedCards.pinned`), and at 100k tools reading every card here
    would undo that.
    """
    if _allows_all(policy):
        return frozenset(
            (e.server, e.tool)
            for e in drift
            if not e.exposed and e.server in cards and cards.tool(e.server, e.tool) is not None
        )
    out: set[ToolKey] = set()
    for server, card in cards.items():
        for tool in card.body.tools:
            entry = drift.get(server, tool.name)
            if (entry is not None and not entry.exposed) or not tool_allowed(
                policy, server, {tool.name, tool.upstream_name}
            ):
                out.add((server, tool.name))
    return frozenset(out)


def _allows_all(policy: CatalogPolicy) -> bool:
    return not policy.deny and "*" in policy.allow


def serving_cache(config: Config) -> EmbeddingCache:
    """The state directory's embedding cache, shared by every entry point."""
    from cartograph.index.cache import EmbeddingCache

    return EmbeddingCache(config.state_dir)


def build_serving_index(
    config: Config,
    cards: VerifiedCards,
    embedder: Embedder,
    *,
    cache: EmbeddingCache | None,
    exclude: Iterable[ToolKey] = (),
) -> ToolIndex:
    """The index over ``cards`` minus ``exclude``, with the config's ranker settings.

    Tool vectors come from the persisted index beside the cards
    (``<state_dir>/index``): a restart never re-embeds an unchanged card.
    For a model that abstains by the open world, the background mask is built
    here too: it is one product of the background's ~1,900 tasks with every
    tool (0.04 s at 527 tools, 7 s at 100,000), which the first discover after
    each rebuild would otherwise wait for.
    """
    from cartograph.index.open_world import calibrated_delta
    from cartograph.index.tool_index import ToolIndex
    from cartograph.index.vector_store import VectorStore

    index = ToolIndex.build(
        cards,
        embedder,
        cache=cache,
        exclude=exclude,
        default_method=config.index.ranker,
        pooled_steps=config.index.pooled_steps,
        store=VectorStore(config.state_dir),
    )
    if calibrated_delta(embedder.model_id) is not None:
        index.open_world()
    return index


def warm_up(embedder: Embedder) -> threading.Thread | None:
    """Load the model in a worker thread, overlapping card verification; None if nothing to load.

    The first ``embed`` otherwise pays for the model file check and the ONNX
    session (~0.2 s) right when the first query is waiting. Loading releases
    the GIL for most of that time. Join the thread before the first query.
    """
    load = getattr(embedder, "load", None)
    if load is None:
        return None
    thread = threading.Thread(target=load, name="cartograph-model-load", daemon=True)
    thread.start()
    return thread
