"""PostgreSQL storage: versioned migrations on start, the URL's rules, the audit trail.

Against a real PostgreSQL server (Debian's package, started by ``conftest``).
The outage tests stop and restart that server for real.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cartograph.config.model import StorageConfig
from cartograph.errors import AuditUnavailable, StorageError
from cartograph.gateway.audit import AuditRecord, Redactor
from cartograph.storage import audit as audit_module
from cartograph.storage.audit import PostgresAudit
from cartograph.storage.postgres import Database, release_database, shared_database
from cartograph.storage.spool import spool_dir
from cartograph.storage.usage import MIGRATIONS as USAGE_MIGRATIONS
from tests.helpers.postgres import Postgres
from tests.helpers.serving import free_port, wait_for


def record(n: int = 0, outcome: str = "ok", **extra: Any) -> AuditRecord:
    return AuditRecord(
        time="2026-12-01T10:00:00.000+00:00",
        catalog="default",
        principal="ci",
        proxy_tool="call",
        server="fs",
        tool="read_file",
        duration_ms=1.5,
        outcome=outcome,
        arguments={"path": "string"},
        trace=f"00-{n:032x}-{1:016x}-01",
        **extra,
    )


def rows(database: Database, *columns: str) -> list[tuple[Any, ...]]:
    # A fresh connection: after a restart the pool's may be dead, which is not under test here.
    with database.direct(timeout=10.0) as conn:
        return conn.execute(
            f"SELECT {', '.join(columns)} FROM audit_records ORDER BY trace"
        ).fetchall()


@pytest.fixture
def database(storage: StorageConfig) -> Iterator[Database]:
    db = shared_database(storage)
    try:
        yield db
    finally:
        release_database(db)


def test_a_fresh_database_is_migrated_once_and_reopening_is_a_no_op(database: Database) -> None:
    assert database.migrate("usage", USAGE_MIGRATIONS) == 2
    assert database.version("usage") == 2
    other = Database(database.config)  # another replica starting against the same database
    try:
        assert other.migrate("usage", USAGE_MIGRATIONS) == 2
        with other.connection() as conn:
            tables = conn.execute(
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema = 'public' AND table_name LIKE 'usage%'"
            ).fetchone()
        assert tables == (3,)
    finally:
        other.close()


def test_a_database_migrated_by_a_newer_cartograph_is_refused(database: Database) -> None:
    database.migrate("usage", USAGE_MIGRATIONS)
    with database.connection() as conn:
        conn.execute("UPDATE cartograph_schema SET version = 99 WHERE component = 'usage'")
    newer = Database(database.config)
    try:
        with pytest.raises(StorageError) as caught:
            newer.migrate("usage", USAGE_MIGRATIONS)
        assert caught.value.code == "storage_schema_newer"
    finally:
        newer.close()


def test_a_password_in_the_url_is_refused_before_connecting(database_url: str) -> None:
    leaky = database_url.replace("cartograph@", "cartograph:hunter2@")
    with pytest.raises(StorageError) as caught:
        Database(StorageConfig(url=leaky))
    assert caught.value.code == "storage_password_in_url"
    assert "hunter2" not in caught.value.message


def test_a_url_that_is_not_postgresql_is_refused() -> None:
    with pytest.raises(StorageError) as caught:
        Database(StorageConfig(url="mysql://db/cartograph"))
    assert caught.value.code == "storage_url"


def test_an_unreachable_database_fails_start_with_its_own_code() -> None:
    url = f"postgresql://cartograph@127.0.0.1:{free_port()}/x"
    with pytest.raises(StorageError) as caught:
        Database(StorageConfig(url=url, timeout=1.0))
    assert caught.value.code == "storage_unreachable"


def test_a_wrong_password_fails_start_and_the_message_holds_no_password(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CARTOGRAPH_DB_PASSWORD", "wrong-password-value")
    with pytest.raises(StorageError) as caught:
        Database(StorageConfig(url=database_url, timeout=2.0))
    assert caught.value.code == "storage_unreachable"
    assert "wrong-password-value" not in caught.value.message


def test_an_audit_record_is_committed_when_write_returns_with_secrets_redacted(
    database: Database, tmp_path: Path
) -> None:
    sink = PostgresAudit(
        shared_database(database.config),
        tmp_path,
        redactor=Redactor(["s3cret-token"]),
        spool_records=10,
    )
    sink.write(record(1, outcome="upstream_error: s3cret-token leaked"))
    (row,) = rows(database, "outcome", "arguments", "repairs", "replica", "trace")
    assert row[0] == "upstream_error: [redacted] leaked"
    assert row[1] == {"path": "string"} and row[2] == []
    assert row[3] == sink.replica and row[4].startswith("00-")
    assert database.version("audit") == 2
    sink.close()


def test_an_outage_spools_records_durably_and_a_restart_drains_each_exactly_once(
    postgres: Postgres, database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_module, "RETRY_INTERVAL", 0.0)
    monkeypatch.setattr(audit_module, "MAX_WAIT", 0.2)  # retry on every write
    sink = PostgresAudit(shared_database(database.config), tmp_path, spool_records=100)
    sink.write(record(1))
    postgres.stop()
    try:
        for n in (2, 3, 4):
            sink.write(record(n))  # returns: the record is in the spool, fsync-ed
        assert sink.degraded and sink.spool.count == 3
        spooled = [json.loads(line) for line in sink.spool.path.read_text().splitlines()]
        assert [r["trace"] for r in spooled] == [record(n).trace for n in (2, 3, 4)]
    finally:
        postgres.start()
    sink.write(record(5))  # the database is back: the spool drains, then this record
    assert not sink.degraded and sink.spool.count == 0
    traces = [row[0] for row in rows(database, "trace")]
    assert traces == [record(n).trace for n in range(1, 6)]
    sink.close()


def test_a_full_spool_fails_closed_before_any_call_and_never_drops_a_record(
    postgres: Postgres, database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_module, "RETRY_INTERVAL", 0.0)
    monkeypatch.setattr(audit_module, "MAX_WAIT", 0.2)
    sink = PostgresAudit(shared_database(database.config), tmp_path, spool_records=1)
    postgres.stop()
    try:
        sink.write(record(1))  # spooled
        assert sink.degraded
        with pytest.raises(AuditUnavailable) as refused:
            sink.admit()  # the handlers ask this before forwarding a call
        assert refused.value.code == "audit_unavailable"
        with pytest.raises(AuditUnavailable):
            sink.write(record(2))  # raised, never dropped quietly
    finally:
        postgres.start()
    sink.admit()  # back: admission drains the spool and lets calls through again
    assert [row[0] for row in rows(database, "trace")] == [record(1).trace]
    sink.close()


def test_a_spool_left_by_a_dead_replica_is_written_by_the_next_one(
    postgres: Postgres, database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_module, "RETRY_INTERVAL", 0.0)
    monkeypatch.setattr(audit_module, "MAX_WAIT", 0.2)
    dead = PostgresAudit(shared_database(database.config), tmp_path, spool_records=10)
    postgres.stop()
    try:
        dead.write(record(7))
    finally:
        postgres.start()
    dead.spool.close()  # the process "died": its file stays, its lock goes
    assert len(list(spool_dir(tmp_path).glob("*.jsonl"))) == 1
    # The next replica starts with a pool whose connection predates the restart, as
    # under load (the failure that was seen: "server closed the connection unexpectedly").
    PostgresAudit(shared_database(database.config), tmp_path, spool_records=10).close()
    assert [row[0] for row in rows(database, "trace")] == [record(7).trace]
    assert list(spool_dir(tmp_path).glob("*.jsonl")) == []


def test_the_first_write_after_a_database_restart_is_stored_not_spooled(
    postgres: Postgres, database: Database, tmp_path: Path
) -> None:
    """The pool's connections die with the server; the write retries on a fresh one."""
    sink = PostgresAudit(shared_database(database.config), tmp_path, spool_records=10)
    sink.write(record(1))  # the pool now holds an open connection
    postgres.stop()
    postgres.start()
    sink.write(record(2))
    assert not sink.degraded and sink.spool.count == 0
    assert [row[0] for row in rows(database, "trace")] == [record(n).trace for n in (1, 2)]
    sink.close()


HELD: int = 0x41554454
"""The advisory lock a test takes to hold one audit INSERT inside the database."""
_HOLD_ONE_TRACE = """
CREATE FUNCTION hold_marked_insert() RETURNS trigger AS $$
BEGIN
    IF NEW.trace = '{trace}' THEN PERFORM pg_advisory_xact_lock({lock}); END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER hold_marked_insert BEFORE INSERT ON audit_records
    FOR EACH ROW EXECUTE FUNCTION hold_marked_insert();
"""


def waiting_on_lock(database: Database) -> bool:
    with database.connection() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE 'INSERT INTO audit_records%%'"
        ).fetchone()
    return bool(row and row[0])


def test_a_write_held_in_the_database_does_not_hold_up_the_next_one(
    database: Database, tmp_path: Path
) -> None:
    """Healthy writes share the pool: one slow INSERT no longer serialises the replica's calls.

    A trigger makes the INSERT of record 1 wait for an advisory lock the test
    holds; while it waits (seen in ``pg_stat_activity``), record 2 is written
    and committed. Under a single lock around every insert, record 2 would wait
    for record 1, and the bounded join below would fail.
    """
    sink = PostgresAudit(shared_database(database.config), tmp_path, spool_records=10)
    assert sink.database.config.pool_size >= 2
    with database.connection() as conn:
        conn.execute(_HOLD_ONE_TRACE.format(trace=record(1).trace, lock=HELD))
    holder = database.connection()
    conn = holder.__enter__()
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (HELD,))
    held = threading.Thread(target=sink.write, args=(record(1),))
    try:
        held.start()
        assert wait_for(lambda: waiting_on_lock(database), limit=60)
        second = threading.Thread(target=sink.write, args=(record(2),))
        second.start()
        second.join(timeout=60)
        assert not second.is_alive(), "record 2 waited for record 1"
        assert [row[0] for row in rows(database, "trace")] == [record(2).trace]
        assert held.is_alive()  # record 1 is still inside the database, not spooled
    finally:
        holder.__exit__(None, None, None)  # commit: releases the advisory lock
        held.join(timeout=60)
    assert not held.is_alive()
    assert [row[0] for row in rows(database, "trace")] == [record(1).trace, record(2).trace]
    assert not sink.degraded and sink.spool.count == 0
    sink.close()


def test_concurrent_writes_store_each_record_exactly_once(
    database: Database, tmp_path: Path
) -> None:
    sink = PostgresAudit(shared_database(database.config), tmp_path, spool_records=10)
    numbers = [[n * 100 + i for i in range(25)] for n in range(8)]

    def writer(mine: list[int]) -> None:
        for n in mine:
            sink.write(record(n))

    threads = [threading.Thread(target=writer, args=(mine,)) for mine in numbers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    traces = [row[0] for row in rows(database, "trace")]
    assert traces == sorted(str(record(n).trace) for mine in numbers for n in mine)
    assert not sink.degraded and sink.spool.count == 0
    sink.close()


def test_a_version_1_usage_log_is_migrated_and_its_rows_belong_to_the_local_principal(
    database: Database,
) -> None:
    database.migrate("usage", USAGE_MIGRATIONS[:1])
    with database.connection() as conn:
        conn.execute(
            "INSERT INTO usage_tasks (catalog, session, created, task, model, vector) "
            "VALUES ('default', 's', 1.0, 'old task', 'm', %s)",
            (b"\x00" * 16,),
        )
    upgraded = Database(database.config)  # the next Cartograph starting against it
    try:
        assert upgraded.migrate("usage", USAGE_MIGRATIONS) == 2
        with upgraded.connection() as conn:
            rows = conn.execute("SELECT principal FROM usage_tasks").fetchall()
        assert rows == [("stdio",)]
    finally:
        upgraded.close()
