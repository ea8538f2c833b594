"""The SQLite usage log: schema migrations, retention, forgetting, crash safety."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cartograph.errors import UsageLogError
from cartograph.learning.sqlite import SCHEMA_VERSION, SqliteUsageStore, usage_log_path
from cartograph.learning.store import CallRecord, Retention, SurfacedTool, TaskRecord

DAY = 86_400.0


def task(
    catalog: str = "default", created: float = 1000.0, text: str = "read a file"
) -> TaskRecord:
    vector = np.ones(4, dtype=np.float32) / 2.0
    surfaced = (SurfacedTool("fs", "read_file", "d1"), SurfacedTool("fs", "write_file", "d2"))
    return TaskRecord(catalog, "local", text, "m", vector, surfaced, created)


def call(
    task_id: int, tool: str = "read_file", outcome: str = "ok", digest: str = "d1"
) -> CallRecord:
    return CallRecord(task_id, "fs", tool, digest, outcome, 1001.0)


def test_a_new_log_is_created_0600_at_the_current_schema_version(tmp_path: Path) -> None:
    path = usage_log_path(tmp_path / "state")
    store = SqliteUsageStore(path)
    try:
        assert store.status().schema_version == SCHEMA_VERSION
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        journal = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
        assert journal == "wal"
    finally:
        store.close()


def test_reopening_keeps_the_log_and_does_not_migrate_again(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    store = SqliteUsageStore(path)
    task_id = store.add_task(task())
    store.add_call(call(task_id))
    store.close()
    again = SqliteUsageStore(path)
    try:
        status = again.status()
        assert (status.tasks, status.calls, status.outcomes) == (1, 1, {"ok": 1})
    finally:
        again.close()


def test_a_log_from_a_newer_cartograph_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UsageLogError) as info:
        SqliteUsageStore(path)
    assert info.value.code == "usage_log_newer"


def test_a_file_that_is_not_a_database_is_refused_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(UsageLogError) as info:
        SqliteUsageStore(path)
    assert info.value.code == "usage_log_corrupt"


def test_evidence_holds_only_successful_calls_of_its_own_catalog(tmp_path: Path) -> None:
    store = SqliteUsageStore(tmp_path / "usage.sqlite3")
    try:
        a = store.add_task(task("a"))
        store.add_call(call(a, "read_file", "ok"))
        store.add_call(call(a, "write_file", "tool_error", "d2"))
        b = store.add_task(task("b"))
        store.add_call(call(b, "write_file", "ok", "d2"))
        failed_only = store.add_task(task("a", text="failed task"))
        store.add_call(call(failed_only, "write_file", "upstream_timeout", "d2"))
        (only,) = store.evidence("a", "m", limit=10)
        assert only.task_id == a and only.tools == (("fs", "read_file"),)
        assert [e.tools for e in store.evidence("b", "m", limit=10)] == [(("fs", "write_file"),)]
        assert store.evidence("a", "other-model", limit=10) == []
    finally:
        store.close()


def test_retention_keeps_the_newest_rows_within_the_age_limit(tmp_path: Path) -> None:
    store = SqliteUsageStore(tmp_path / "usage.sqlite3")
    try:
        now = 100 * DAY
        old = store.add_task(task(created=now - 40 * DAY))
        ids = [store.add_task(task(created=now - i)) for i in range(5)]
        store.add_call(call(old))
        deleted = store.prune(Retention(max_tasks=3, max_age_days=30), now=now)
        assert deleted == 3
        kept = [row["id"] for row in store.export()]
        assert kept == ids[2:]
        assert store.status().calls == 0  # the old task's call went with it
    finally:
        store.close()


def test_forget_before_a_date_and_forget_everything(tmp_path: Path) -> None:
    store = SqliteUsageStore(tmp_path / "usage.sqlite3")
    try:
        early = store.add_task(task(created=10.0))
        store.add_call(call(early))
        late = store.add_task(task(created=20.0))
        assert store.forget(before=15.0) == 1
        assert [row["id"] for row in store.export()] == [late]
        assert store.status().calls == 0
        assert store.forget() == 1
        assert store.status().tasks == 0
    finally:
        store.close()


def test_drop_stale_deletes_only_evidence_of_changed_card_entries(tmp_path: Path) -> None:
    store = SqliteUsageStore(tmp_path / "usage.sqlite3")
    try:
        t = store.add_task(task())
        store.add_call(call(t, "read_file", "ok", "d1"))
        store.add_call(call(t, "write_file", "ok", "d2"))
        other = CallRecord(t, "git", "status", "g1", "ok", 1.0)
        store.add_call(other)
        # read_file's card entry changed; git's card did not load this time (not judged).
        assert store.drop_stale("default", {"fs": {"read_file": "NEW", "write_file": "d2"}}) == 1
        (evidence,) = store.evidence("default", "m", limit=10)
        assert evidence.tools == (("fs", "write_file"), ("git", "status"))
    finally:
        store.close()


def test_export_lists_each_task_with_what_it_surfaced_and_its_calls(tmp_path: Path) -> None:
    store = SqliteUsageStore(tmp_path / "usage.sqlite3")
    try:
        t = store.add_task(task(created=0.0))
        store.add_call(call(t, "write_file", "tool_error", "d2"))
        (row,) = store.export()
        assert row == {
            "id": t,
            "catalog": "default",
            "principal": "stdio",
            "session": "local",
            "time": "1970-01-01T00:00:00Z",
            "task": "read a file",
            "model": "m",
            "surfaced": ["fs/read_file", "fs/write_file"],
            "calls": [
                {"tool": "fs/write_file", "outcome": "tool_error", "time": "1970-01-01T00:16:41Z"}
            ],
        }
    finally:
        store.close()


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from cartograph.learning.sqlite import SqliteUsageStore
    from cartograph.learning.store import CallRecord, SurfacedTool, TaskRecord
    store = SqliteUsageStore(Path(sys.argv[1]))
    vector = np.ones(384, dtype=np.float32)
    for i in range(100000):
        tid = store.add_task(TaskRecord("default", "s", f"task {i}", "m", vector,
                                        (SurfacedTool("fs", "read_file", "d"),), float(i)))
        store.add_call(CallRecord(tid, "fs", "read_file", "d", "ok", float(i)))
        print(tid, flush=True)
    """
)


def test_a_process_killed_mid_write_loses_no_acknowledged_row_and_corrupts_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "usage.sqlite3"
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdout is not None
        acknowledged = [int(writer.stdout.readline()) for _ in range(200)]
        writer.kill()  # SIGKILL: no cleanup, possibly mid-transaction
        writer.wait(timeout=30)
    store = SqliteUsageStore(path)  # runs quick_check; raises if corrupt
    try:
        ids = {row["id"] for row in store.export()}
        assert set(acknowledged) <= ids
        evidence = store.evidence("default", "m", limit=1_000_000)
        assert {e.task_id for e in evidence} >= set(acknowledged)
    finally:
        store.close()


def test_a_version_1_log_is_migrated_and_its_rows_belong_to_the_local_principal(
    tmp_path: Path,
) -> None:
    from cartograph.learning.sqlite import MIGRATIONS

    path = tmp_path / "usage.sqlite3"
    db = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        db.execute(statement)
    db.execute(
        "INSERT INTO tasks (catalog, session, created, task, model, vector) "
        "VALUES ('default', 's', 1.0, 'old task', 'm', ?)",
        (np.ones(4, dtype="<f4").tobytes(),),
    )
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    store = SqliteUsageStore(path)
    try:
        assert store.schema_version == SCHEMA_VERSION == 2
        assert [row["principal"] for row in store.export()] == ["stdio"]
        assert store.status().principals == {"stdio": {"tasks": 1, "calls": 0}}
    finally:
        store.close()
