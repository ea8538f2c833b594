"""The audit trail in PostgreSQL, with a bounded local spool for outages.

Every record is committed before :meth:`PostgresAudit.write` returns, so a
call's result never leaves the proxy before its audit record is durable.
While the database is healthy, writes run concurrently, one pooled connection
each, at most ``[storage] pool_size`` at once (:attr:`PostgresAudit.slots`):
a caller waits for a free slot rather than for the pool, whose wait is
bounded by :data:`MAX_WAIT` and would read a busy pool as an outage. Only
the outage path below (probe, drain, spool) is serialised.

When the database cannot take a record (down, restarting, unreachable), the
record goes to this replica's local spool (:mod:`.spool`), ``fsync``-ed, and
the call's result goes out. While records are spooled, the database is tried
again at most once per :data:`RETRY_INTERVAL` (a call never waits out a
connect timeout twice in a row); the first success drains the spool into
the database. When the spool is full (``[storage] spool_records``; 0 = no
spool) the sink **fails closed**: :meth:`admit` refuses every ``call`` with
``audit_unavailable`` before it reaches an upstream, and a record that
still cannot be kept turns the call's answer into that error. No record is
ever dropped silently.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

from cartograph.errors import AuditUnavailable, StateFileError
from cartograph.gateway.audit import AuditRecord, Redactor, record_data
from cartograph.storage.postgres import Database
from cartograph.storage.spool import Spool, orphans, read_records, spool_dir

logger = logging.getLogger(__name__)

COMPONENT: Final = "audit"
RETRY_INTERVAL: Final = 1.0
"""Seconds between attempts to reach the database while records are spooled."""
MAX_WAIT: Final = 1.0
"""At most this long for a pooled connection; past it the record is spooled instead."""

MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    # 1: one row per proxy call or refusal (P-AUDIT-1); ``id`` makes a spooled re-insert a no-op.
    (
        """CREATE TABLE audit_records (
            id UUID PRIMARY KEY,
            time TIMESTAMPTZ NOT NULL,
            replica TEXT NOT NULL,
            catalog TEXT NOT NULL,
            principal TEXT,
            proxy_tool TEXT NOT NULL,
            server TEXT,
            tool TEXT,
            duration_ms DOUBLE PRECISION NOT NULL,
            outcome TEXT NOT NULL,
            arguments JSONB,
            repairs JSONB NOT NULL,
            http_status INTEGER,
            path TEXT,
            trace TEXT
        )""",
        "CREATE INDEX audit_records_by_time ON audit_records (time)",
        "CREATE INDEX audit_records_by_trace ON audit_records (trace) WHERE trace IS NOT NULL",
    ),
    # 2: the classes of secret the scan saw, by direction (P-SEC-1); never a value.
    ("ALTER TABLE audit_records ADD COLUMN secrets JSONB",),
)
_COLUMNS: Final = (
    "id",
    "time",
    "replica",
    "catalog",
    "principal",
    "proxy_tool",
    "server",
    "tool",
    "duration_ms",
    "outcome",
    "arguments",
    "repairs",
    "http_status",
    "path",
    "trace",
    "secrets",
)
_INSERT: Final = (
    "INSERT INTO audit_records (id, time, replica, catalog, principal, proxy_tool, server, "
    "tool, duration_ms, outcome, arguments, repairs, http_status, path, trace, secrets) VALUES "
    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (id) DO NOTHING"
)


def replica_name() -> str:
    """Which process wrote a record: host and pid, enough to find its logs."""
    return f"{socket.gethostname()}:{os.getpid()}"


class PostgresAudit:
    """:class:`~cartograph.gateway.audit.AuditSink` over PostgreSQL (see module docstring)."""

    blocking = True

    def __init__(
        self,
        database: Database,
        state_dir: Path,
        *,
        redactor: Redactor | None = None,
        spool_records: int,
        replica: str | None = None,
    ) -> None:
        self.database = database
        self.redactor = redactor or Redactor()
        self.replica = replica or replica_name()
        self.spool = Spool(spool_dir(state_dir), spool_records)
        self._lock = threading.Lock()
        """Serialises the outage path: probing, draining and appending to the spool."""
        self.slots = threading.BoundedSemaphore(database.config.pool_size)
        """One per pooled connection a healthy write may hold (see the module docstring)."""
        self._next_try = 0.0
        database.migrate(COMPONENT, MIGRATIONS)
        self._adopt_orphans()

    @property
    def degraded(self) -> bool:
        return self.spool.count > 0 or self._next_try > 0

    @property
    def location(self) -> str:
        return self.database.location

    def admit(self) -> None:
        """Raise ``audit_unavailable`` while one more record could be neither stored nor spooled."""
        with self._lock:
            if not self.spool.full:
                return
            if self._due() and (self._flush() if self.spool.count else self._insert([])):
                return
        raise AuditUnavailable(
            f"the audit database {self.location} is unreachable and this replica's spool is "
            f"full ({self.spool.capacity} records); calls are refused until it is back",
            spooled=self.spool.count,
        )

    def write(self, record: AuditRecord) -> None:
        row = self._row(record)
        if not self.degraded and self._insert_concurrently(row):
            return
        with self._lock:
            if self._due() and self._flush() and self._insert([row]):
                return
            if self.spool.full:
                raise AuditUnavailable(
                    f"the audit record of this call could not be stored in {self.location} "
                    f"nor spooled (spool full: {self.spool.capacity}); the call's answer is "
                    "withheld",
                    spooled=self.spool.count,
                )
            self.spool.append(row)

    def _insert_concurrently(self, row: dict[str, Any]) -> bool:
        """The healthy path: one pooled connection, no lock; False sends it down the outage path.

        A failure here sets the back-off before returning, so the outage path
        spools the record rather than trying the database a second time; a
        record whose commit was acknowledged-but-lost keeps its id, so its
        spooled copy is a no-op on drain (``ON CONFLICT DO NOTHING``).
        """
        with self.slots:
            return self._insert([row])

    def _row(self, record: AuditRecord) -> dict[str, Any]:
        data = record_data(record, self.redactor)
        data["id"] = str(uuid.uuid4())
        data["replica"] = self.replica
        return data

    def _due(self) -> bool:
        return time.monotonic() >= self._next_try

    def _flush(self) -> bool:
        """Drain the spool into the database; False (and back off) when it cannot."""
        if self.spool.count == 0:
            return True
        if not self._insert(self.spool.records()):
            return False
        logger.warning("audit: %d spooled records written to %s", self.spool.count, self.location)
        self.spool.clear()
        return True

    def _insert(self, rows: Iterable[dict[str, Any]]) -> bool:
        """Store ``rows`` (or probe, when empty); False, backing off, when the database cannot.

        Healthy, a pooled connection is tried first and, when it fails, one fresh
        connection: after the server restarted, every connection the pool holds is
        dead, and its first use fails ("server closed the connection unexpectedly")
        although the database is up. Degraded, only a fresh connection probes (the
        pool's reconnect backs off), allowed the full connect timeout: a refused
        connection fails at once anyway. A retried insert is a no-op for rows the
        first try committed (``ON CONFLICT DO NOTHING`` on the record's id).
        """
        values = [_values(row) for row in rows]
        timeout = self.database.config.timeout
        tries: list[tuple[Callable[[float], Any], float]] = [(self.database.direct, timeout)]
        if not self.degraded:
            tries.insert(0, (self.database.connection, min(MAX_WAIT, timeout)))
        failure: Exception | None = None
        for connect, wait in tries:
            try:
                with connect(wait) as conn, conn.cursor() as cursor:
                    if values:
                        cursor.executemany(_INSERT, values)
                    else:  # a probe: is the database back?
                        cursor.execute("SELECT 1")
            except Exception as exc:  # any driver or pool failure: the next try, then spool
                failure = exc
                continue
            self._next_try = 0.0
            return True
        self._next_try = time.monotonic() + RETRY_INTERVAL
        logger.warning("audit: database %s unavailable (%s); spooling", self.location, failure)
        return False

    def _adopt_orphans(self) -> None:
        """Write the spools of replicas that died into the database (best effort, at start)."""
        with orphans(self.spool.path.parent, self.spool.path) as paths:
            for path in paths:
                try:
                    records = read_records(path)
                except StateFileError as exc:  # left on disk for the operator
                    logger.warning("audit: spool %s not adopted: %s (%s)", path, exc, exc.code)
                    continue
                if self._insert(records):
                    path.unlink()

    def close(self) -> None:
        """Try once more to drain the spool, then let go of the database."""
        from cartograph.storage.postgres import release_database

        with self._lock:
            if self.spool.count:
                self._flush()
            self.spool.close()
        release_database(self.database)


def _values(row: dict[str, Any]) -> tuple[Any, ...]:
    """The row in column order; JSON columns as JSON text (the server casts it to JSONB)."""
    out = []
    for column in _COLUMNS:
        value = row.get(column)
        if column == "arguments" or (column == "secrets" and value is not None):
            value = json.dumps(value, ensure_ascii=False)
        elif column == "repairs":
            value = json.dumps(list(value or ()), ensure_ascii=False)
        out.append(value)
    return tuple(out)
