"""Learning from use: which tools served which tasks, fed back into ``discover``.

Every ``call`` that follows a ``discover`` passes through the proxy, so the
proxy can tell which tools actually served a task. This package keeps that
as a usage log (:mod:`.store`: the interface; :mod:`.sqlite`: the embedded
default in the state directory) and turns it into a bounded re-ranking step
after the zero-shot ranker (:mod:`.learner`, glued per catalog by
:mod:`.catalog`). See ``docs/retrieval.md``, "Learning from use".
"""

from __future__ import annotations

from cartograph.config.model import Config
from cartograph.index.embedders.base import Embedder
from cartograph.learning.catalog import CatalogLearning
from cartograph.learning.sqlite import SqliteUsageStore, usage_log_path

__all__ = ["CatalogLearning", "SqliteUsageStore", "open_learning", "usage_log_path"]


def open_learning(config: Config, catalog: str, embedder: Embedder) -> CatalogLearning | None:
    """The catalog's learning, or None when ``[learning] enabled = false``.

    Raises :class:`~cartograph.errors.UsageLogError` when the log cannot be
    opened; the caller decides whether to serve without learning.
    """
    if not config.learning.enabled:
        return None
    from cartograph.storage import open_usage_store

    store = open_usage_store(config)
    return CatalogLearning(store, catalog=catalog, embedder=embedder, config=config.learning)
