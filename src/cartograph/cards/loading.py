"""The verified cards a config serves, and the state serving needs.

Every serving entry point (``serve``, ``discover`` / ``call`` / ``status`` on
the command line, Rift, stubs) reads cards through here: the configured
servers' cards from the :class:`~cartograph.cards.store.CardStore`, verified
against the configured trust set, under the signed manifest when bootstrap
wrote one. Split from the store so that the store knows files and
verification, not configs (and the store and the manifest no longer import
each other).
"""

from __future__ import annotations

import logging

from cartograph import error_codes as codes
from cartograph.cards.manifest import load_with_manifest
from cartograph.cards.paths import trust_path
from cartograph.cards.store import CardLoadReport, CardStore
from cartograph.cards.trust import load_trust
from cartograph.cards.verified import VerifiedCards
from cartograph.config.model import Config
from cartograph.errors import CardError, ConfigError

log = logging.getLogger(__name__)


def load_report_for_config(config: Config) -> CardLoadReport:
    """Verify the configured servers' cards against the configured trust set."""
    store = CardStore(config.state_dir)
    names = [s.name for s in config.enabled_servers] or None
    present = set(store.servers())
    wanted = [n for n in names if n in present] if names is not None else None
    trust = load_trust(trust_path(config))
    # One signature over every card when bootstrap wrote a manifest; else each card's own.
    pinned = load_with_manifest(store, trust, wanted)
    return pinned if pinned is not None else store.load(trust, servers=wanted)


def require_serving_state(config: Config) -> None:
    """Raise, naming the command that fixes it, unless there is something to serve.

    What every serving entry point (``serve``, and ``discover`` / ``call`` /
    ``status`` on the command line) needs before it loads anything: a config
    that names servers, a trust set with a key in it, and at least one card for
    a configured server. Without this check each of them "worked" and served
    an empty catalog — an empty table with exit 0 (issue 12).
    """
    where = str(config.source) if config.source is not None else "the config"
    names = [s.name for s in config.enabled_servers]
    if not names:
        raise ConfigError(
            f"{where} names no servers: add [servers.NAME] tables (or import an mcpServers "
            "file, docs/config.md), then run `cartograph bootstrap`",
            code=codes.NO_SERVERS,
        )
    trust = trust_path(config)
    if not load_trust(trust).keys:
        raise CardError(
            f"no trusted key in {trust}: run `cartograph keys init` (creates the operator key "
            "and trusts it), then `cartograph bootstrap`",
            code=codes.NO_TRUST,
        )
    store = CardStore(config.state_dir)
    if not set(store.servers()) & set(names):
        raise CardError(
            f"no signed card for any configured server in {store.root}: run `cartograph bootstrap`",
            code=codes.NO_CARDS,
        )


def load_verified_for_config(config: Config) -> VerifiedCards:
    """What start-up uses: verified cards only; failures are logged and left out."""
    report = load_report_for_config(config)
    for server, exc in report.failures.items():
        log.warning("card for %s not loaded (%s): %s", server, exc.code, exc.message)
    return report.verified


def load_stored_for_config(config: Config, *, code: str) -> VerifiedCards | None:
    """The operator's verified cards, or ``None`` when the state directory has none yet.

    Card files none of which verify are an error (``code``), not "no cards": the
    callers would otherwise fall back to template cards the proxy does not serve.
    """
    if not CardStore(config.state_dir).servers():
        return None
    cards = load_verified_for_config(config)
    if not cards:
        raise CardError(
            f"no card in {config.state_dir} verified; run `cartograph cards verify` to see why",
            code=code,
        )
    return cards


__all__ = [
    "load_report_for_config",
    "load_stored_for_config",
    "load_verified_for_config",
    "require_serving_state",
]
