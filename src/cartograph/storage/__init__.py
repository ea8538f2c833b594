"""Where shared state lives: the usage log and the audit trail, embedded or in PostgreSQL.

One switch, ``[storage] url``. Without it (the default) nothing has to run:
the usage log is SQLite in the state directory
(:class:`~cartograph.learning.sqlite.SqliteUsageStore`) and the audit trail is
the JSONL file of ``[gateway] audit_log`` (:class:`~cartograph.gateway.audit.AuditLog`).
With ``url = "postgresql://…"`` both go to one PostgreSQL database that every
replica of a fleet shares (:mod:`.postgres`, :mod:`.usage`, :mod:`.audit`),
through the same two interfaces (``UsageStore``, ``AuditSink``); the driver is
the optional extra ``cartograph[postgres]``. See ``docs/fleet.md``.
"""

from __future__ import annotations

from cartograph.config.model import Config
from cartograph.gateway.audit import AuditLog, AuditSink, Redactor
from cartograph.learning.store import UsageStore

__all__ = ["open_audit", "open_usage_store", "uses_database"]


def uses_database(config: Config) -> bool:
    """True when ``[storage] url`` is set (it must then name PostgreSQL)."""
    return config.storage.url is not None


def open_audit(config: Config, redactor: Redactor | None = None) -> AuditSink:
    """The audit sink ``config`` asks for; raises StorageError when its database is unusable."""
    if not uses_database(config):
        return AuditLog(config.gateway.audit_log, redactor=redactor)
    from cartograph.storage.audit import PostgresAudit
    from cartograph.storage.postgres import release_database, shared_database

    database = shared_database(config.storage)
    try:
        return PostgresAudit(
            database,
            config.state_dir,
            redactor=redactor,
            spool_records=config.storage.spool_records,
        )
    except BaseException:
        release_database(database)
        raise


def open_usage_store(config: Config) -> UsageStore:
    """The usage log ``config`` asks for (UsageLogError when it cannot be opened)."""
    if not uses_database(config):
        from cartograph.learning import default_store

        return default_store(config)
    from cartograph.errors import StorageError, UsageLogError
    from cartograph.storage.postgres import release_database, shared_database
    from cartograph.storage.usage import PostgresUsageStore

    try:
        database = shared_database(config.storage)
    except StorageError as exc:
        raise UsageLogError(exc.message, code=exc.code) from exc
    try:
        return PostgresUsageStore(database)
    except StorageError as exc:  # e.g. a schema from a newer Cartograph
        release_database(database)
        raise UsageLogError(exc.message, code=exc.code) from exc
    except BaseException:
        release_database(database)
        raise
