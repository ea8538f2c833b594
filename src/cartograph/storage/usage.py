"""The usage log in PostgreSQL: the same :class:`~cartograph.learning.store.UsageStore`
as the SQLite default, shared by every replica of a fleet.

The queries, and the bounds they hold (retention per catalog, call rows per
task), are :mod:`cartograph.learning.sql`'s, shared with SQLite; this module
is the connection half. Each method is one transaction on a pooled connection,
committed before it returns (the pool's connection block commits on exit and a
failed commit raises), so "durable on return" holds as for SQLite: nothing is
acknowledged to an agent before PostgreSQL acknowledged the commit. Evidence
is read per catalog as always; every replica sees the evidence every other
replica logged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Final

from cartograph import error_codes as codes
from cartograph.errors import UsageLogError
from cartograph.learning.sql import POSTGRES, Cursor, SqlUsageLog
from cartograph.storage.postgres import Database

COMPONENT: Final = "usage"
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    # 1: tasks, what each surfaced, and the calls attributed to it (as the SQLite log's 1).
    (
        """CREATE TABLE usage_tasks (
            id BIGSERIAL PRIMARY KEY,
            catalog TEXT NOT NULL,
            session TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            task TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BYTEA NOT NULL
        )""",
        "CREATE INDEX usage_tasks_by_catalog ON usage_tasks (catalog, model, id)",
        "CREATE INDEX usage_tasks_by_time ON usage_tasks (created)",
        """CREATE TABLE usage_surfaced (
            task_id BIGINT NOT NULL REFERENCES usage_tasks (id) ON DELETE CASCADE,
            rank INTEGER NOT NULL,
            server TEXT NOT NULL,
            tool TEXT NOT NULL,
            digest TEXT NOT NULL,
            PRIMARY KEY (task_id, rank)
        )""",
        """CREATE TABLE usage_calls (
            id BIGSERIAL PRIMARY KEY,
            task_id BIGINT NOT NULL REFERENCES usage_tasks (id) ON DELETE CASCADE,
            created DOUBLE PRECISION NOT NULL,
            server TEXT NOT NULL,
            tool TEXT NOT NULL,
            digest TEXT NOT NULL,
            outcome TEXT NOT NULL
        )""",
        "CREATE INDEX usage_calls_by_task ON usage_calls (task_id)",
        "CREATE INDEX usage_calls_by_tool ON usage_calls (server, tool, outcome)",
    ),
    # 2: the principal that logged each task (as the SQLite log's 2).
    (
        "ALTER TABLE usage_tasks ADD COLUMN principal TEXT NOT NULL DEFAULT 'stdio'",
        "CREATE INDEX usage_tasks_by_principal ON usage_tasks (principal, catalog)",
    ),
)


class PostgresUsageStore(SqlUsageLog):
    """:class:`~cartograph.learning.store.UsageStore` over PostgreSQL (see module doc)."""

    dialect = POSTGRES

    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate(COMPONENT, MIGRATIONS)

    @property
    def location(self) -> str:
        return self.database.location

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Cursor]:
        try:
            with self.database.connection() as conn, conn.cursor() as cursor:
                yield cursor
        except UsageLogError:
            raise
        except Exception as exc:  # psycopg's errors, pool timeouts
            raise self._error(exc) from exc

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            with self.database.connection() as conn:
                return conn.execute(sql, params).fetchall()
        except UsageLogError:
            raise
        except Exception as exc:
            raise self._error(exc) from exc

    def _error(self, exc: Exception) -> UsageLogError:
        return UsageLogError(
            f"usage log {self.location}: {exc}; check the database", code=codes.USAGE_LOG_IO
        )

    def _schema_version(self) -> int:
        return self.database.version(COMPONENT)

    def _size_bytes(self) -> int:
        size = self._read(
            "SELECT coalesce(sum(pg_total_relation_size(c)), 0) FROM unnest("
            "ARRAY['usage_tasks', 'usage_surfaced', 'usage_calls']::regclass[]) AS c"
        )[0][0]
        return int(size)

    def close(self) -> None:
        from cartograph.storage.postgres import release_database

        release_database(self.database)
