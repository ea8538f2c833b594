"""The embedded usage log: one SQLite file in the state directory.

Why SQLite in WAL mode with ``synchronous=NORMAL``: every committed
transaction survives a crash of the process (it is in the write-ahead log
before ``add_task``/``add_call`` return), a crash mid-transaction rolls back
cleanly on the next open, readers never block the writer, and a commit costs
no ``fsync`` (only a power loss can drop the last few commits, never corrupt
the file). The file is created 0600 inside the 0700 state directory (P-FS-1):
it holds the tasks agents asked for. The queries are :mod:`.sql`'s, shared
with the PostgreSQL store.

**One connection per file per process** (P-LEARN-2). Every store of one
resolved path — one per catalog, plus any command run in-process — shares one
reference-counted connection from a process-wide registry, and nothing else in
the process ever opens the file. That matters because SQLite's locks are POSIX
``fcntl`` locks, which belong to the process, and closing *any* descriptor of
a file drops all of them: a second ``open``/``close`` of the database (once per
catalog, as a permission check did) silently released the shared lock that
marks the log as in use. The next process to close its own connection then
found itself "last", checkpointed and deleted the write-ahead log the server
was still writing into; later rows were invisible to readers and lost at the
next kill. Readers that only look (``learning status``, ``export``) open
read-only (``mode=ro``), which can neither write, checkpoint nor delete.

The schema is versioned with ``PRAGMA user_version``; :data:`MIGRATIONS` are
applied in order when a writable connection opens, each in its own
transaction, so an interrupted upgrade leaves the previous version intact. A
file written by a newer Cartograph is refused rather than guessed at.

The connection is shared by the worker threads that call in, serialised by
its lock: the log's traffic is one small insert per discover or call.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cartograph import error_codes as codes
from cartograph.errors import UsageLogError
from cartograph.fsutil import PRIVATE_FILE_MODE, make_private_dirs
from cartograph.learning.sql import SQLITE, Cursor, SqlUsageLog

USAGE_LOG_NAME: Final = "usage.sqlite3"
BUSY_TIMEOUT: Final = 10.0
"""Seconds a write waits for another process's write (``learning forget``) to finish."""

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
    # 2: the principal that logged each task (rows from before it: the local one).
    (
        "ALTER TABLE tasks ADD COLUMN principal TEXT NOT NULL DEFAULT 'stdio'",
        "CREATE INDEX tasks_by_principal ON tasks (principal, catalog)",
    ),
)
SCHEMA_VERSION: Final = len(MIGRATIONS)


def usage_log_path(state_dir: Path) -> Path:
    return state_dir / USAGE_LOG_NAME


class SqliteUsageStore(SqlUsageLog):
    """:class:`~cartograph.learning.store.UsageStore` over one SQLite file (see module doc).

    ``read_only`` stores are for commands that only look: they never create,
    migrate or write the file, and refuse writes.
    """

    dialect = SQLITE

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._handle: _Handle | None = acquire(path, writable=not read_only)

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def schema_version(self) -> int:
        return self._schema_version()

    def _open_handle(self) -> _Handle:
        if self._handle is None:
            raise UsageLogError(f"usage log {self.path}: already closed", code=codes.USAGE_LOG_IO)
        return self._handle

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Cursor]:
        """One write transaction, taken before the first read so it cannot deadlock."""
        if self.read_only:
            raise UsageLogError(f"usage log {self.path}: opened read-only", code=codes.USAGE_LOG_IO)
        handle = self._open_handle()
        with handle.lock:
            db = handle.db
            try:
                db.execute("BEGIN IMMEDIATE")
                yield db.cursor()
                db.execute("COMMIT")
            except BaseException as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _error(self.path, exc) from exc
                raise

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        handle = self._open_handle()
        with handle.lock:
            try:
                return handle.db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _error(self.path, exc) from exc

    def _schema_version(self) -> int:
        return int(self._read("PRAGMA user_version")[0][0])

    def _size_bytes(self) -> int:
        # stat, never open: a descriptor opened and closed here would drop this
        # process's locks on the file (module docstring). The WAL is part of the
        # log until checkpointed.
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    def forget(
        self,
        *,
        before: float | None = None,
        catalog: str | None = None,
        principal: str | None = None,
    ) -> int:
        deleted = super().forget(before=before, catalog=catalog, principal=principal)
        if before is None and catalog is None and principal is None:  # "forget everything"
            handle = self._open_handle()
            with handle.lock:
                try:
                    handle.db.execute("VACUUM")
                except sqlite3.Error as exc:
                    raise _error(self.path, exc) from exc
        return deleted

    def close(self) -> None:
        """Let go of the shared connection (closed with its last store); idempotent."""
        handle, self._handle = self._handle, None
        if handle is not None:
            release(handle)


# -- one connection per file per process -------------------------------------------


@dataclass(eq=False)
class _Handle:
    """The process's one connection to one usage log, and the stores sharing it."""

    key: Path
    db: sqlite3.Connection
    writable: bool
    lock: threading.Lock
    users: int = 0


_HANDLES: dict[Path, _Handle] = {}
_HANDLES_LOCK = threading.Lock()


def acquire(path: Path, *, writable: bool) -> _Handle:
    """This process's connection to ``path``, opened on first use; pair with :func:`release`.

    A read-only handle is upgraded in place when a writable one is asked for.
    Held while opening, the registry lock also keeps a second thread from
    opening the file beside the first.
    """
    with _HANDLES_LOCK:
        key = _key(path, create=writable)
        handle = _HANDLES.get(key)
        if handle is None:
            handle = _Handle(key, _connect(key, writable=writable), writable, threading.Lock())
            _HANDLES[key] = handle
        elif writable and not handle.writable:
            _upgrade(handle)
        handle.users += 1
        return handle


def release(handle: _Handle) -> None:
    """One store let go; the last one closes the connection (and so may checkpoint)."""
    with _HANDLES_LOCK:
        handle.users -= 1
        if handle.users > 0:
            return
        if _HANDLES.get(handle.key) is handle:
            del _HANDLES[handle.key]
        with handle.lock:
            handle.db.close()


def open_handles() -> int:
    """How many usage logs this process holds open (for tests)."""
    with _HANDLES_LOCK:
        return len(_HANDLES)


def _key(path: Path, *, create: bool) -> Path:
    """The registry key: the absolute path with symlinks resolved."""
    if create:
        try:
            make_private_dirs(path.parent)
        except OSError as exc:
            raise _unreadable(path, exc) from exc
    return path.resolve()


def _upgrade(handle: _Handle) -> None:
    # Two connections for a moment: SQLite keeps one process's connections to one
    # file on a shared lock table and defers closing the old descriptor while the
    # new one holds a lock, so no lock is dropped.
    db = _connect(handle.key, writable=True)
    with handle.lock:
        old, handle.db, handle.writable = handle.db, db, True
    old.close()


def _connect(path: Path, *, writable: bool) -> sqlite3.Connection:
    """Open the log (create it 0600 and migrate it when ``writable``), checked."""
    try:
        if writable:
            _create_private(path)
            db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT
            )
        else:
            uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
            db = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT
            )
    except (OSError, sqlite3.Error) as exc:
        raise _unreadable(path, exc) from exc
    try:
        _prepare(db, path, writable=writable)
    except BaseException:
        db.close()
        raise
    return db


def _create_private(path: Path) -> None:
    """Create the file 0600 if it does not exist; an existing file is never opened here.

    Only a file this call created (``O_EXCL``) gets a descriptor, which no
    connection of this process can have a lock on yet.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)  # the umask must not decide
    finally:
        os.close(fd)


def _prepare(db: sqlite3.Connection, path: Path, *, writable: bool) -> None:
    try:
        if writable:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        check = db.execute("PRAGMA quick_check").fetchone()
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        raise _error(path, exc) from exc
    if check is None or check[0] != "ok":
        raise UsageLogError(
            f"the usage log {path} fails SQLite's integrity check; move it aside and "
            "Cartograph starts a new one",
            code=codes.USAGE_LOG_CORRUPT,
        )
    if version > SCHEMA_VERSION:
        raise UsageLogError(
            f"the usage log {path} has schema version {version}, newer than this "
            f"Cartograph's {SCHEMA_VERSION}; upgrade Cartograph or move the file aside",
            code=codes.USAGE_LOG_NEWER,
        )
    if writable:
        _migrate(db, path, version)


def _migrate(db: sqlite3.Connection, path: Path, version: int) -> None:
    for number in range(version, SCHEMA_VERSION):
        try:
            db.execute("BEGIN IMMEDIATE")
            # Another process may have migrated since we read the version.
            if int(db.execute("PRAGMA user_version").fetchone()[0]) == number:
                for statement in MIGRATIONS[number]:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number + 1}")
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise _error(path, exc) from exc


def _unreadable(path: Path, exc: Exception) -> UsageLogError:
    return UsageLogError(
        f"cannot open the usage log {path}: {exc}; check the state directory's permissions",
        code=codes.USAGE_LOG_UNREADABLE,
    )


def _error(path: Path, exc: sqlite3.Error) -> UsageLogError:
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
        return UsageLogError(
            f"{path} is not a usage log (not an SQLite database); move it aside and Cartograph "
            "starts a new one",
            code=codes.USAGE_LOG_CORRUPT,
        )
    return UsageLogError(f"usage log {path}: {exc}", code=codes.USAGE_LOG_IO)
