"""The usage log in PostgreSQL: the same :class:`~cartograph.learning.store.UsageStore`
as the SQLite default, shared by every replica of a fleet.

Each method is one transaction on a pooled connection (committed before it
returns, so "durable on return" holds as for SQLite). Evidence is read per
catalog as always; every replica sees the evidence every other replica logged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from cartograph import error_codes as codes
from cartograph.errors import UsageLogError
from cartograph.learning.store import (
    OK,
    CallRecord,
    Evidence,
    ExportQueries,
    Retention,
    TaskRecord,
    UsageStatus,
    evidence_from_rows,
    export_tasks,
    vector_bytes,
)
from cartograph.storage.postgres import Database

COMPONENT: Final = "usage"
SECONDS_PER_DAY: Final = 86_400.0
EXPORT_QUERIES: Final = ExportQueries(
    tasks="SELECT id, catalog, session, created, task, model FROM usage_tasks "
    "WHERE (%s::text IS NULL OR catalog = %s) AND id > %s ORDER BY id LIMIT %s",
    surfaced="SELECT task_id, server, tool FROM usage_surfaced "
    "WHERE task_id BETWEEN %s AND %s ORDER BY task_id, rank",
    calls="SELECT task_id, server, tool, outcome, created FROM usage_calls "
    "WHERE task_id BETWEEN %s AND %s ORDER BY task_id, id",
)

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
)


class PostgresUsageStore:
    """:class:`~cartograph.learning.store.UsageStore` over PostgreSQL (see module doc)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate(COMPONENT, MIGRATIONS)

    @property
    def location(self) -> str:
        return self.database.location

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            with self.database.connection() as conn:
                cursor = conn.execute(sql, params)
                return cursor.fetchall() if cursor.description else [cursor.rowcount]
        except UsageLogError:
            raise
        except Exception as exc:  # psycopg's errors, pool timeouts
            raise UsageLogError(
                f"usage log {self.location}: {exc}; check the database", code=codes.USAGE_LOG_IO
            ) from exc

    # -- writes ------------------------------------------------------------------

    def add_task(self, record: TaskRecord) -> int:
        try:
            with self.database.connection() as conn, conn.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO usage_tasks (catalog, session, created, task, model, vector) "
                    "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                    (
                        record.catalog,
                        record.session,
                        record.created,
                        record.task,
                        record.model,
                        vector_bytes(record.vector),
                    ),
                )
                row = cursor.fetchone()
                task_id = int(row[0]) if row else 0
                cursor.executemany(
                    "INSERT INTO usage_surfaced (task_id, rank, server, tool, digest) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    [
                        (task_id, rank, s.server, s.tool, s.digest)
                        for rank, s in enumerate(record.surfaced, start=1)
                    ],
                )
        except Exception as exc:
            raise UsageLogError(
                f"usage log {self.location}: {exc}; check the database", code=codes.USAGE_LOG_IO
            ) from exc
        return task_id

    def add_call(self, record: CallRecord) -> None:
        self._run(
            "INSERT INTO usage_calls (task_id, created, server, tool, digest, outcome) "
            "SELECT id, %s, %s, %s, %s, %s FROM usage_tasks WHERE id = %s",
            (
                record.created,
                record.server,
                record.tool,
                record.digest,
                record.outcome,
                record.task_id,
            ),
        )

    def drop_stale(self, catalog: str, digests: Mapping[str, Mapping[str, str]]) -> int:
        rows = self._run(
            "SELECT DISTINCT c.server, c.tool, c.digest FROM usage_calls c "
            "JOIN usage_tasks t ON t.id = c.task_id WHERE t.catalog = %s AND c.outcome = %s",
            (catalog, OK),
        )
        deleted = 0
        for server, tool, digest in rows:
            if server in digests and digests[server].get(tool) != digest:
                deleted += self._run(
                    "DELETE FROM usage_calls WHERE server = %s AND tool = %s AND digest = %s "
                    "AND outcome = %s AND task_id IN "
                    "(SELECT id FROM usage_tasks WHERE catalog = %s)",
                    (server, tool, digest, OK, catalog),
                )[0]
        return deleted

    def prune(self, retention: Retention, *, now: float) -> int:
        cutoff = now - retention.max_age_days * SECONDS_PER_DAY
        aged = self._run("DELETE FROM usage_tasks WHERE created < %s", (cutoff,))[0]
        overflow = self._run(
            "DELETE FROM usage_tasks WHERE id <= "
            "(SELECT id FROM usage_tasks ORDER BY id DESC LIMIT 1 OFFSET %s)",
            (retention.max_tasks,),
        )[0]
        return int(aged) + int(overflow)

    def forget(self, *, before: float | None = None, catalog: str | None = None) -> int:
        return int(
            self._run(
                "DELETE FROM usage_tasks WHERE (%s::double precision IS NULL OR created < %s) "
                "AND (%s::text IS NULL OR catalog = %s)",
                (before, before, catalog, catalog),
            )[0]
        )

    # -- reads -------------------------------------------------------------------

    def evidence(self, catalog: str, model: str, *, limit: int) -> list[Evidence]:
        rows = self._run(
            "WITH recent AS (SELECT DISTINCT t.id FROM usage_tasks t "
            "JOIN usage_calls c ON c.task_id = t.id "
            "WHERE t.catalog = %s AND t.model = %s AND c.outcome = %s "
            "ORDER BY t.id DESC LIMIT %s) "
            "SELECT t.id, t.task, t.vector, c.server, c.tool FROM recent r "
            "JOIN usage_tasks t ON t.id = r.id JOIN usage_calls c ON c.task_id = t.id "
            "WHERE c.outcome = %s ORDER BY t.id, c.id",
            (catalog, model, OK, limit, OK),
        )
        return evidence_from_rows(rows)

    def status(self) -> UsageStatus:
        tasks, oldest, newest = self._run(
            "SELECT count(*), min(created), max(created) FROM usage_tasks"
        )[0]
        outcomes = dict(self._run("SELECT outcome, count(*) FROM usage_calls GROUP BY outcome"))
        catalogs = dict(self._run("SELECT catalog, count(*) FROM usage_tasks GROUP BY catalog"))
        size = self._run(
            "SELECT coalesce(sum(pg_total_relation_size(c)), 0) FROM unnest("
            "ARRAY['usage_tasks', 'usage_surfaced', 'usage_calls']::regclass[]) AS c"
        )[0][0]
        return UsageStatus(
            location=self.location,
            schema_version=self.database.version(COMPONENT),
            tasks=int(tasks),
            calls=sum(int(v) for v in outcomes.values()),
            outcomes={str(k): int(v) for k, v in sorted(outcomes.items())},
            catalogs={str(k): int(v) for k, v in sorted(catalogs.items())},
            oldest=oldest,
            newest=newest,
            size_bytes=int(size),
        )

    def export(self, *, catalog: str | None = None) -> Iterator[dict[str, Any]]:
        return export_tasks(self._run, EXPORT_QUERIES, catalog)

    def close(self) -> None:
        from cartograph.storage.postgres import release_database

        release_database(self.database)
