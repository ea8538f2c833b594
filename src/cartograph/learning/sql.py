"""The usage log's SQL, written once for both stores: SQLite and PostgreSQL.

:class:`SqlUsageLog` holds every query of the
:class:`~cartograph.learning.store.UsageStore` and the logic around them. A
store supplies the connection half: how one write transaction runs
(``_transaction``, yielding a cursor; committed before it returns) and how one
read runs (``_read``), plus the two things only its engine knows (schema
version, size on disk). The SQL text is one dialect-neutral form; a
:class:`Dialect` names the tables, the placeholder and how a new row's id comes
back (``RETURNING`` where SQLite may be older than 3.35).

The bounds live here, so both stores hold them: retention counts tasks **per
catalog** (one catalog's traffic never evicts another's evidence), and a task
holds at most ``max_calls`` call rows (a session looping on one ``discover``
cannot fill the log). Each task names its principal (migration 2 of both
stores adds the column, ``stdio`` for rows logged before it): evidence is read
with it, and ``forget``/``export``/``status`` work per principal.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol

from cartograph.config.model import DEFAULT_MAX_CALLS_PER_TASK
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

SECONDS_PER_DAY: Final = 86_400.0


class Cursor(Protocol):
    """What both drivers' cursors (``sqlite3``, ``psycopg``) offer and the queries use."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: tuple[Any, ...], /) -> object: ...

    def executemany(self, sql: str, params: Sequence[tuple[Any, ...]], /) -> object: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


@dataclass(frozen=True)
class Dialect:
    """How one engine spells the shared SQL."""

    tables: str
    """Prefix of the table names (PostgreSQL's share a database with the audit trail)."""
    param: str
    returning: bool
    """Whether ``INSERT … RETURNING id`` hands back a new task's id (else: ``lastrowid``)."""

    def sql(self, text: str) -> str:
        return _render(self, text)


@functools.cache
def _render(dialect: Dialect, text: str) -> str:
    return text.format(t=dialect.tables).replace("?", dialect.param)


SQLITE: Final = Dialect(tables="", param="?", returning=False)
POSTGRES: Final = Dialect(tables="usage_", param="%s", returning=True)

_ADD_TASK: Final = (
    "INSERT INTO {t}tasks (catalog, principal, session, created, task, model, vector) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_ADD_SURFACED: Final = (
    "INSERT INTO {t}surfaced (task_id, rank, server, tool, digest) VALUES (?, ?, ?, ?, ?)"
)
# Nothing when the task is gone (forgotten, pruned) or already holds max_calls rows.
_ADD_CALL: Final = (
    "INSERT INTO {t}calls (task_id, created, server, tool, digest, outcome) "
    "SELECT id, ?, ?, ?, ?, ? FROM {t}tasks WHERE id = ? "
    "AND (SELECT count(*) FROM {t}calls WHERE task_id = ?) < ?"
)
_EVIDENCED_TOOLS: Final = (
    "SELECT DISTINCT c.server, c.tool, c.digest FROM {t}calls c "
    "JOIN {t}tasks t ON t.id = c.task_id WHERE t.catalog = ? AND c.outcome = ?"
)
_DROP_TOOL: Final = (
    "DELETE FROM {t}calls WHERE server = ? AND tool = ? AND digest = ? AND outcome = ? "
    "AND task_id IN (SELECT id FROM {t}tasks WHERE catalog = ?)"
)
_PRUNE_AGED: Final = "DELETE FROM {t}tasks WHERE created < ?"
# Each catalog keeps its own newest max_tasks: the count is never shared between catalogs.
# One query per catalog (~4 ms each at 10,000 tasks); one window over all cost three times that.
_CATALOGS: Final = "SELECT DISTINCT catalog FROM {t}tasks"
_PRUNE_OVERFLOW: Final = (
    "DELETE FROM {t}tasks WHERE catalog = ? AND id <= "
    "(SELECT id FROM {t}tasks WHERE catalog = ? ORDER BY id DESC LIMIT 1 OFFSET ?)"
)
_FORGET: Final = (
    "DELETE FROM {t}tasks WHERE (CAST(? AS DOUBLE PRECISION) IS NULL OR created < ?) "
    "AND (CAST(? AS TEXT) IS NULL OR catalog = ?) AND (CAST(? AS TEXT) IS NULL OR principal = ?)"
)
_EVIDENCE: Final = (
    "WITH recent AS (SELECT DISTINCT t.id FROM {t}tasks t JOIN {t}calls c ON c.task_id = t.id "
    "WHERE t.catalog = ? AND t.model = ? AND c.outcome = ? ORDER BY t.id DESC LIMIT ?) "
    "SELECT t.id, t.task, t.vector, t.principal, c.server, c.tool FROM recent r "
    "JOIN {t}tasks t ON t.id = r.id JOIN {t}calls c ON c.task_id = t.id "
    "WHERE c.outcome = ? ORDER BY t.id, c.id"
)
_TASK_COUNTS: Final = "SELECT count(*), min(created), max(created) FROM {t}tasks"
_OUTCOME_COUNTS: Final = "SELECT outcome, count(*) FROM {t}calls GROUP BY outcome"
_CATALOG_COUNTS: Final = "SELECT catalog, count(*) FROM {t}tasks GROUP BY catalog"
_PRINCIPAL_COUNTS: Final = (
    "SELECT t.principal, count(DISTINCT t.id), count(c.id) FROM {t}tasks t "
    "LEFT JOIN {t}calls c ON c.task_id = t.id GROUP BY t.principal"
)
_EXPORT: Final = ExportQueries(
    tasks="SELECT id, catalog, principal, session, created, task, model FROM {t}tasks "
    "WHERE (CAST(? AS TEXT) IS NULL OR catalog = ?) "
    "AND (CAST(? AS TEXT) IS NULL OR principal = ?) AND id > ? ORDER BY id LIMIT ?",
    surfaced="SELECT task_id, server, tool FROM {t}surfaced "
    "WHERE task_id BETWEEN ? AND ? ORDER BY task_id, rank",
    calls="SELECT task_id, server, tool, outcome, created FROM {t}calls "
    "WHERE task_id BETWEEN ? AND ? ORDER BY task_id, id",
)


class SqlUsageLog(ABC):
    """The :class:`~cartograph.learning.store.UsageStore` methods over any SQL engine."""

    dialect: ClassVar[Dialect]

    @property
    @abstractmethod
    def location(self) -> str: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Cursor]:
        """One write transaction, committed when the block ends (rolled back if it raises)."""

    @abstractmethod
    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Every row of one read query."""

    @abstractmethod
    def _schema_version(self) -> int: ...

    @abstractmethod
    def _size_bytes(self) -> int: ...

    def _sql(self, text: str) -> str:
        return self.dialect.sql(text)

    # -- writes ------------------------------------------------------------------

    def add_task(self, record: TaskRecord) -> int:
        params = (
            record.catalog,
            record.principal,
            record.session,
            record.created,
            record.task,
            record.model,
            vector_bytes(record.vector),
        )
        with self._transaction() as cursor:
            task_id = self._insert_task(cursor, params)
            cursor.executemany(
                self._sql(_ADD_SURFACED),
                [
                    (task_id, rank, s.server, s.tool, s.digest)
                    for rank, s in enumerate(record.surfaced, start=1)
                ],
            )
        return task_id

    def _insert_task(self, cursor: Cursor, params: tuple[Any, ...]) -> int:
        if self.dialect.returning:
            cursor.execute(self._sql(_ADD_TASK) + " RETURNING id", params)
            return int(cursor.fetchone()[0])
        cursor.execute(self._sql(_ADD_TASK), params)
        return int(getattr(cursor, "lastrowid", 0) or 0)

    def add_call(self, record: CallRecord, *, max_calls: int = DEFAULT_MAX_CALLS_PER_TASK) -> bool:
        """Log one call; False when its task is gone or already holds ``max_calls`` rows."""
        with self._transaction() as cursor:
            cursor.execute(
                self._sql(_ADD_CALL),
                (
                    record.created,
                    record.server,
                    record.tool,
                    record.digest,
                    record.outcome,
                    record.task_id,
                    record.task_id,
                    max_calls,
                ),
            )
            return cursor.rowcount > 0

    def drop_stale(self, catalog: str, digests: Mapping[str, Mapping[str, str]]) -> int:
        """Delete evidence for tools of ``digests``' servers whose card entry changed or went."""
        rows = self._read(self._sql(_EVIDENCED_TOOLS), (catalog, OK))
        stale = [
            (server, tool, digest)
            for server, tool, digest in rows
            if server in digests and digests[server].get(tool) != digest
        ]
        if not stale:
            return 0
        deleted = 0
        with self._transaction() as cursor:
            for server, tool, digest in stale:
                cursor.execute(self._sql(_DROP_TOOL), (server, tool, digest, OK, catalog))
                deleted += cursor.rowcount
        return deleted

    def prune(self, retention: Retention, *, now: float) -> int:
        """Delete tasks older than the age limit, and each catalog's beyond its newest max."""
        cutoff = now - retention.max_age_days * SECONDS_PER_DAY
        with self._transaction() as cursor:
            cursor.execute(self._sql(_PRUNE_AGED), (cutoff,))
            deleted = cursor.rowcount
            cursor.execute(self._sql(_CATALOGS), ())
            for (catalog,) in cursor.fetchall():
                cursor.execute(self._sql(_PRUNE_OVERFLOW), (catalog, catalog, retention.max_tasks))
                deleted += cursor.rowcount
            return deleted

    def forget(
        self,
        *,
        before: float | None = None,
        catalog: str | None = None,
        principal: str | None = None,
    ) -> int:
        params = (before, before, catalog, catalog, principal, principal)
        with self._transaction() as cursor:
            cursor.execute(self._sql(_FORGET), params)
            return cursor.rowcount

    # -- reads -------------------------------------------------------------------

    def evidence(self, catalog: str, model: str, *, limit: int) -> list[Evidence]:
        rows = self._read(self._sql(_EVIDENCE), (catalog, model, OK, limit, OK))
        return evidence_from_rows(rows)

    def status(self) -> UsageStatus:
        tasks, oldest, newest = self._read(self._sql(_TASK_COUNTS))[0]
        outcomes = dict(self._read(self._sql(_OUTCOME_COUNTS)))
        catalogs = dict(self._read(self._sql(_CATALOG_COUNTS)))
        principals = {
            str(name): {"tasks": int(tasks), "calls": int(calls)}
            for name, tasks, calls in sorted(self._read(self._sql(_PRINCIPAL_COUNTS)))
        }
        return UsageStatus(
            location=self.location,
            schema_version=self._schema_version(),
            tasks=int(tasks),
            calls=sum(int(v) for v in outcomes.values()),
            outcomes={str(k): int(v) for k, v in sorted(outcomes.items())},
            catalogs={str(k): int(v) for k, v in sorted(catalogs.items())},
            principals=principals,
            oldest=oldest,
            newest=newest,
            size_bytes=self._size_bytes(),
        )

    def export(
        self, *, catalog: str | None = None, principal: str | None = None
    ) -> Iterator[dict[str, Any]]:
        queries = ExportQueries(
            tasks=self._sql(_EXPORT.tasks),
            surfaced=self._sql(_EXPORT.surfaced),
            calls=self._sql(_EXPORT.calls),
        )
        return export_tasks(self._read, queries, catalog, principal)
