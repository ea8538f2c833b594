"""Learning from use: which tools served which tasks, fed back into ``discover``.

Every ``call`` that follows a ``discover`` passes through the proxy, so the
proxy can tell which tools actually served a task. This package keeps that
as a usage log (:mod:`.store`: the interface; :mod:`.sqlite`: the embedded
default in the state directory; :mod:`.sql`: the queries it shares with the
PostgreSQL store) and turns it into a bounded re-ranking step
after the zero-shot ranker (:mod:`.learner`, glued per catalog by
:mod:`.catalog`). See ``docs/retrieval.md``, "Learning from use".
"""

from __future__ import annotations

from collections.abc import Callable

from cartograph.config.model import Config
from cartograph.index.embedders.base import Embedder
from cartograph.learning.catalog import CatalogLearning
from cartograph.learning.sqlite import SqliteUsageStore, usage_log_path
from cartograph.learning.store import UsageStore

__all__ = ["CatalogLearning", "SqliteUsageStore", "open_learning", "usage_log_path"]


def default_store(config: Config) -> UsageStore:
    """The embedded usage log: SQLite in the state directory."""
    return SqliteUsageStore(usage_log_path(config.state_dir))


def open_learning(
    config: Config,
    catalog: str,
    embedder: Embedder,
    open_store: Callable[[Config], UsageStore] | None = None,
) -> CatalogLearning | None:
    """The catalog's learning, or None when ``[learning] enabled = false``.

    Raises :class:`~cartograph.errors.UsageLogError` when the log cannot be
    opened; the caller decides whether to serve without learning.
    """
    if not config.learning.enabled:
        return None
    store = open_store(config) if open_store is not None else default_store(config)
    return CatalogLearning(store, catalog=catalog, embedder=embedder, config=config.learning)
