"""One PostgreSQL database shared by the replicas of a fleet: connections and migrations.

``psycopg`` (3) and ``psycopg_pool`` are the optional extra
``cartograph[postgres]``: the embedded default never imports them. One
:class:`Database` per URL per process (:func:`shared_database`), reference
counted, so every catalog's usage log and the audit trail share one small
connection pool.

The schema is versioned per component (``audit``, ``usage``) in the table
``cartograph_schema``. On open, each component's missing migrations run in
one transaction holding a transaction-scoped advisory lock, so replicas
starting at the same moment migrate once, in order, and an interrupted
upgrade leaves the previous version intact. A database migrated by a newer
Cartograph is refused rather than guessed at.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

from cartograph import error_codes as codes
from cartograph.config.model import StorageConfig
from cartograph.errors import StorageError

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_MIGRATION_LOCK: Final = 0x43415254  # "CART": one advisory lock id for every migration
SCHEMES: Final = ("postgresql", "postgres")
CLOSE_TIMEOUT: Final = 1.0
"""Seconds the pool's background workers get to stop on close."""


def is_postgres_url(url: str | None) -> bool:
    return url is not None and urlsplit(url).scheme in SCHEMES


def redacted_url(url: str) -> str:
    """The URL as status output shows it: never a password (there should be none anyway)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if parts.username:
        host = f"{parts.username}@{host}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def check_url(config: StorageConfig) -> str:
    """The configured URL, refused when it is not PostgreSQL or carries a password."""
    url = config.url or ""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise StorageError(
            f"[storage] url must start with postgresql://, not {parts.scheme or url!r}; "
            "remove it to keep the embedded SQLite default",
            code=codes.STORAGE_URL,
        )
    if parts.password:
        raise StorageError(
            "[storage] url holds a password; remove it from the file and put it in the "
            f"environment variable ${config.password_env}",
            code=codes.STORAGE_PASSWORD_IN_URL,
        )
    return url


class Database:
    """A connection pool to one PostgreSQL database, with its schema brought up to date."""

    def __init__(self, config: StorageConfig, environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.url = check_url(config)
        self.location = redacted_url(self.url)
        self._environ = environ if environ is not None else os.environ
        self._pool = _open_pool(config, self.url, self._environ)
        self.users = 0
        self._migrated: set[str] = set()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; the block is one transaction (commit on success)."""
        with self._pool.connection(timeout=timeout) as conn:
            yield conn

    @contextlib.contextmanager
    def direct(self, timeout: float) -> Iterator[psycopg.Connection[Any]]:
        """A new connection outside the pool, one transaction.

        For probing a database that was down: the pool reconnects with
        exponential backoff, so right after a restart it can take seconds
        to hand out a connection while a fresh connect takes milliseconds.
        """
        import psycopg

        kwargs = _connect_kwargs(self.config, self._environ)
        kwargs["connect_timeout"] = max(1, round(timeout))
        with psycopg.connect(self.url, **kwargs) as conn:
            yield conn

    def migrate(self, component: str, migrations: Sequence[Sequence[str]]) -> int:
        """Apply ``component``'s missing migrations (once per process); returns its version."""
        with self._lock:
            if component in self._migrated:
                return len(migrations)
            with self.connection() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS cartograph_schema ("
                    "component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
                )
                row = conn.execute(
                    "SELECT version FROM cartograph_schema WHERE component = %s", (component,)
                ).fetchone()
                version = int(row[0]) if row else 0
                if version > len(migrations):
                    raise StorageError(
                        f"the database {self.location} has {component} schema version {version}, "
                        f"newer than this Cartograph's {len(migrations)}; upgrade Cartograph",
                        code=codes.STORAGE_SCHEMA_NEWER,
                    )
                for statement in (s for step in migrations[version:] for s in step):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO cartograph_schema (component, version) VALUES (%s, %s) "
                    "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
                    (component, len(migrations)),
                )
            self._migrated.add(component)
            return len(migrations)

    def version(self, component: str) -> int:
        with self.connection() as conn:
            row = conn.execute(
                "SELECT version FROM cartograph_schema WHERE component = %s", (component,)
            ).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        self._pool.close(timeout=CLOSE_TIMEOUT)


def _open_pool(config: StorageConfig, url: str, environ: Mapping[str, str]) -> ConnectionPool:
    try:
        from psycopg_pool import ConnectionPool
    except ImportError as exc:  # the optional extra is not installed
        raise StorageError(
            "[storage] url names PostgreSQL but its driver is not installed; "
            "pip install 'cartograph[postgres]'",
            code=codes.STORAGE_DRIVER_MISSING,
        ) from exc
    pool = ConnectionPool(
        url,
        kwargs=_connect_kwargs(config, environ),
        min_size=1,
        max_size=config.pool_size,
        timeout=config.timeout,
        open=False,
        name="cartograph",
    )
    try:
        pool.open(wait=True, timeout=config.timeout)
    except Exception as exc:
        pool.close(timeout=CLOSE_TIMEOUT)
        raise StorageError(
            f"cannot connect to {redacted_url(url)} within {config.timeout:g} s: {exc}; "
            f"check the server, the URL and ${config.password_env}",
            code=codes.STORAGE_UNREACHABLE,
        ) from exc
    return pool


def _connect_kwargs(config: StorageConfig, environ: Mapping[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"connect_timeout": max(1, round(config.timeout))}
    password = environ.get(config.password_env)
    if password:
        kwargs["password"] = password
    return kwargs


_SHARED: dict[str, Database] = {}
_SHARED_LOCK = threading.Lock()


def shared_database(config: StorageConfig) -> Database:
    """This process's :class:`Database` for ``config.url``; pair with :func:`release_database`."""
    url = check_url(config)
    with _SHARED_LOCK:
        database = _SHARED.get(url)
        if database is None:
            database = _SHARED[url] = Database(config)
        database.users += 1
        return database


def release_database(database: Database) -> None:
    """Close the pool once its last user (catalog runtime, audit sink) let go."""
    with _SHARED_LOCK:
        database.users -= 1
        if database.users > 0:
            return
        if _SHARED.get(database.url) is database:
            del _SHARED[database.url]
    database.close()
