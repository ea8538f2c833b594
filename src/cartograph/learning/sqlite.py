"""The embedded usage log: one SQLite file in the state directory.

Why SQLite in WAL mode with ``synchronous=NORMAL``: every committed
transaction survives a crash of the process (it is in the write-ahead log
before ``add_task``/``add_call`` return), a crash mid-transaction rolls back
cleanly on the next open, readers never block the writer, and a commit costs
no ``fsync`` (only a power loss can drop the last few commits, never corrupt
the file). The file is created 0600 inside the 0700 state directory (P-FS-1):
it holds the tasks agents asked for.

The schema is versioned with ``PRAGMA user_version``; :data:`MIGRATIONS` are
applied in order on open, each in its own transaction, so an interrupted
upgrade leaves the previous version intact. A file written by a newer
Cartograph is refused rather than guessed at.

One connection, shared by the worker threads that call in, serialised by a
lock: the log's traffic is one small insert per discover or call.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
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

USAGE_LOG_NAME: Final = "usage.sqlite3"
SECONDS_PER_DAY: Final = 86_400.0

MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    # 1: tasks, what each surfaced, and the calls attributed to it.
    (
        """CREATE TABLE tasks (
            id INTEGER PRIMARY KEY,
            catalog TEXT NOT NULL,
            session TEXT NOT NULL,
            created REAL NOT NULL,
            task TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL
        )""",
        "CREATE INDEX tasks_by_catalog ON tasks (catalog, model, id)",
        "CREATE INDEX tasks_by_time ON tasks (created)",
        """CREATE TABLE surfaced (
            task_id INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
            rank INTEGER NOT NULL,
            server TEXT NOT NULL,
            tool TEXT NOT NULL,
            digest TEXT NOT NULL,
            PRIMARY KEY (task_id, rank)
        )""",
        """CREATE TABLE calls (
            id INTEGER PRIMARY KEY,
            task_id INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
            created REAL NOT NULL,
            server TEXT NOT NULL,
            tool TEXT NOT NULL,
            digest TEXT NOT NULL,
            outcome TEXT NOT NULL
        )""",
        "CREATE INDEX calls_by_task ON calls (task_id)",
        "CREATE INDEX calls_by_tool ON calls (server, tool, outcome)",
    ),
)
SCHEMA_VERSION: Final = len(MIGRATIONS)

EXPORT_QUERIES: Final = ExportQueries(
    tasks="SELECT id, catalog, session, created, task, model FROM tasks "
    "WHERE (? IS NULL OR catalog = ?) AND id > ? ORDER BY id LIMIT ?",
    surfaced="SELECT task_id, server, tool FROM surfaced "
    "WHERE task_id BETWEEN ? AND ? ORDER BY task_id, rank",
    calls="SELECT task_id, server, tool, outcome, created FROM calls "
    "WHERE task_id BETWEEN ? AND ? ORDER BY task_id, id",
)


def usage_log_path(state_dir: Path) -> Path:
    return state_dir / USAGE_LOG_NAME


class SqliteUsageStore:
    """:class:`~cartograph.learning.store.UsageStore` over one SQLite file (see module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = _open(path)
        try:
            self._migrate()
        except BaseException:
            self._db.close()
            raise

    @property
    def location(self) -> str:
        return str(self.path)

    # -- schema ------------------------------------------------------------------

    def _migrate(self) -> None:
        version = self._version()
        if version > SCHEMA_VERSION:
            raise UsageLogError(
                f"the usage log {self.path} has schema version {version}, newer than this "
                f"Cartograph's {SCHEMA_VERSION}; upgrade Cartograph or move the file aside",
                code=codes.USAGE_LOG_NEWER,
            )
        for number in range(version, SCHEMA_VERSION):
            with self._transaction() as db:
                for statement in MIGRATIONS[number]:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number + 1}")

    def _version(self) -> int:
        row = self._db.execute("PRAGMA user_version").fetchone()
        return int(row[0])

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken before the first read so it cannot deadlock."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _error(self.path, exc) from exc
                raise

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _error(self.path, exc) from exc

    # -- writes ------------------------------------------------------------------

    def add_task(self, record: TaskRecord) -> int:
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO tasks (catalog, session, created, task, model, vector) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    record.catalog,
                    record.session,
                    record.created,
                    record.task,
                    record.model,
                    vector_bytes(record.vector),
                ),
            )
            task_id = int(cursor.lastrowid or 0)
            db.executemany(
                "INSERT INTO surfaced (task_id, rank, server, tool, digest) VALUES (?, ?, ?, ?, ?)",
                [
                    (task_id, rank, s.server, s.tool, s.digest)
                    for rank, s in enumerate(record.surfaced, start=1)
                ],
            )
        return task_id

    def add_call(self, record: CallRecord) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO calls (task_id, created, server, tool, digest, outcome) "
                "SELECT id, ?, ?, ?, ?, ? FROM tasks WHERE id = ?",
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
        """Delete evidence for tools of ``digests``' servers whose card entry changed or went."""
        rows = self._read(
            "SELECT DISTINCT c.server, c.tool, c.digest FROM calls c "
            "JOIN tasks t ON t.id = c.task_id WHERE t.catalog = ? AND c.outcome = ?",
            (catalog, OK),
        )
        stale = [
            (server, tool, digest)
            for server, tool, digest in rows
            if server in digests and digests[server].get(tool) != digest
        ]
        if not stale:
            return 0
        deleted = 0
        with self._transaction() as db:
            for server, tool, digest in stale:
                cursor = db.execute(
                    "DELETE FROM calls WHERE server = ? AND tool = ? AND digest = ? "
                    "AND outcome = ? AND task_id IN (SELECT id FROM tasks WHERE catalog = ?)",
                    (server, tool, digest, OK, catalog),
                )
                deleted += cursor.rowcount
        return deleted

    def prune(self, retention: Retention, *, now: float) -> int:
        cutoff = now - retention.max_age_days * SECONDS_PER_DAY
        with self._transaction() as db:
            aged = db.execute("DELETE FROM tasks WHERE created < ?", (cutoff,)).rowcount
            overflow = db.execute(
                "DELETE FROM tasks WHERE id <= "
                "(SELECT id FROM tasks ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (retention.max_tasks,),
            ).rowcount
        return aged + overflow

    def forget(self, *, before: float | None = None, catalog: str | None = None) -> int:
        with self._transaction() as db:
            deleted: int = db.execute(
                "DELETE FROM tasks WHERE (? IS NULL OR created < ?) AND (? IS NULL OR catalog = ?)",
                (before, before, catalog, catalog),
            ).rowcount
        if before is None and catalog is None:
            with self._lock:  # give the space back: "forget everything" should mean it
                self._db.execute("VACUUM")
        return deleted

    # -- reads -------------------------------------------------------------------

    def evidence(self, catalog: str, model: str, *, limit: int) -> list[Evidence]:
        rows = self._read(
            "WITH recent AS (SELECT DISTINCT t.id FROM tasks t JOIN calls c ON c.task_id = t.id "
            "WHERE t.catalog = ? AND t.model = ? AND c.outcome = ? ORDER BY t.id DESC LIMIT ?) "
            "SELECT t.id, t.task, t.vector, c.server, c.tool FROM recent r "
            "JOIN tasks t ON t.id = r.id JOIN calls c ON c.task_id = t.id "
            "WHERE c.outcome = ? ORDER BY t.id, c.id",
            (catalog, model, OK, limit, OK),
        )
        return evidence_from_rows(rows)

    def status(self) -> UsageStatus:
        tasks, oldest, newest = self._read(
            "SELECT count(*), min(created), max(created) FROM tasks"
        )[0]
        outcomes = dict(self._read("SELECT outcome, count(*) FROM calls GROUP BY outcome"))
        catalogs = dict(self._read("SELECT catalog, count(*) FROM tasks GROUP BY catalog"))
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"))
            if p.exists()  # the WAL is part of the log until checkpointed
        )
        return UsageStatus(
            location=self.location,
            schema_version=self._version(),
            tasks=int(tasks),
            calls=sum(outcomes.values()),
            outcomes={str(k): int(v) for k, v in sorted(outcomes.items())},
            catalogs={str(k): int(v) for k, v in sorted(catalogs.items())},
            oldest=oldest,
            newest=newest,
            size_bytes=size,
        )

    def export(self, *, catalog: str | None = None) -> Iterator[dict[str, Any]]:
        return export_tasks(self._read, EXPORT_QUERIES, catalog)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _open(path: Path) -> sqlite3.Connection:
    """Create (0600, in a 0700 folder) or open the log, in WAL mode."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    except (OSError, sqlite3.Error) as exc:
        raise UsageLogError(
            f"cannot open the usage log {path}: {exc}; check the state directory's permissions",
            code=codes.USAGE_LOG_UNREADABLE,
        ) from exc
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        check = db.execute("PRAGMA quick_check").fetchone()
    except sqlite3.Error as exc:
        db.close()
        raise _error(path, exc) from exc
    if check is None or check[0] != "ok":
        db.close()
        raise UsageLogError(
            f"the usage log {path} fails SQLite's integrity check; move it aside and "
            "Cartograph starts a new one",
            code=codes.USAGE_LOG_CORRUPT,
        )
    return db


def _error(path: Path, exc: sqlite3.Error) -> UsageLogError:
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
        return UsageLogError(
            f"{path} is not a usage log (not an SQLite database); move it aside and Cartograph "
            "starts a new one",
            code=codes.USAGE_LOG_CORRUPT,
        )
    return UsageLogError(f"usage log {path}: {exc}", code=codes.USAGE_LOG_IO)
