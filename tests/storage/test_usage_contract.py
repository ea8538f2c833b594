"""The usage log's contract, held by both implementations: SQLite and PostgreSQL.

The same sequence of writes must read back the same way from either store;
only where the log lives differs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cartograph.config.model import StorageConfig
from cartograph.learning.sqlite import SqliteUsageStore
from cartograph.learning.store import CallRecord, Retention, SurfacedTool, TaskRecord, UsageStore

DAY = 86_400.0


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[UsageStore]:
    if request.param == "sqlite":
        opened: UsageStore = SqliteUsageStore(tmp_path / "usage.sqlite3")
    else:
        from cartograph.storage.postgres import shared_database
        from cartograph.storage.usage import PostgresUsageStore

        config: StorageConfig = request.getfixturevalue("storage")
        opened = PostgresUsageStore(shared_database(config))
    try:
        yield opened
    finally:
        opened.close()


def task(catalog: str = "default", created: float = 1000.0, text: str = "a task") -> TaskRecord:
    vector = np.arange(4, dtype=np.float32) / 4.0
    surfaced = (SurfacedTool("fs", "read_file", "d1"), SurfacedTool("fs", "write_file", "d2"))
    return TaskRecord(catalog, "local", text, "m", vector, surfaced, created)


def call(
    task_id: int, tool: str = "read_file", outcome: str = "ok", digest: str = "d1"
) -> CallRecord:
    return CallRecord(task_id, "fs", tool, digest, outcome, 1001.0)


def test_evidence_holds_only_successful_calls_of_its_own_catalog(store: UsageStore) -> None:
    a = store.add_task(task("a"))
    store.add_call(call(a, "read_file", "ok"))
    store.add_call(call(a, "write_file", "tool_error", "d2"))
    b = store.add_task(task("b"))
    store.add_call(call(b, "write_file", "ok", "d2"))
    (only,) = store.evidence("a", "m", limit=10)
    assert only.task_id == a and only.tools == (("fs", "read_file"),)
    assert only.vector.tolist() == [0.0, 0.25, 0.5, 0.75]
    assert [e.tools for e in store.evidence("b", "m", limit=10)] == [(("fs", "write_file"),)]
    assert store.evidence("a", "other-model", limit=10) == []


def test_retention_keeps_the_newest_rows_within_the_age_limit(store: UsageStore) -> None:
    now = 100 * DAY
    old = store.add_task(task(created=now - 40 * DAY))
    ids = [store.add_task(task(created=now - i)) for i in range(5)]
    store.add_call(call(old))
    assert store.prune(Retention(max_tasks=3, max_age_days=30), now=now) == 3
    assert [row["id"] for row in store.export()] == ids[2:]
    assert store.status().calls == 0


def test_forget_before_a_date_then_everything(store: UsageStore) -> None:
    early = store.add_task(task(created=10.0))
    store.add_call(call(early))
    late = store.add_task(task(created=20.0, text="later"))
    assert store.forget(before=15.0) == 1
    assert [row["id"] for row in store.export()] == [late]
    assert store.forget(catalog="other") == 0
    assert store.forget() == 1
    status = store.status()
    assert (status.tasks, status.calls) == (0, 0)


def test_drop_stale_deletes_only_evidence_of_changed_card_entries(store: UsageStore) -> None:
    t = store.add_task(task())
    store.add_call(call(t, "read_file", "ok", "d1"))
    store.add_call(call(t, "write_file", "ok", "d2"))
    store.add_call(CallRecord(t, "git", "status", "g1", "ok", 1.0))
    assert store.drop_stale("default", {"fs": {"read_file": "NEW", "write_file": "d2"}}) == 1
    (evidence,) = store.evidence("default", "m", limit=10)
    assert evidence.tools == (("fs", "write_file"), ("git", "status"))


def test_export_and_status_read_back_what_was_written(store: UsageStore) -> None:
    t = store.add_task(task(created=0.0))
    store.add_call(call(t, "write_file", "tool_error", "d2"))
    (row,) = store.export()
    assert row == {
        "id": t,
        "catalog": "default",
        "principal": "stdio",
        "session": "local",
        "time": "1970-01-01T00:00:00Z",
        "task": "a task",
        "model": "m",
        "surfaced": ["fs/read_file", "fs/write_file"],
        "calls": [
            {"tool": "fs/write_file", "outcome": "tool_error", "time": "1970-01-01T00:16:41Z"}
        ],
    }
    status = store.status()
    assert (status.tasks, status.calls, status.outcomes) == (1, 1, {"tool_error": 1})
    assert status.catalogs == {"default": 1} and status.schema_version == 2
    assert status.size_bytes > 0


def test_retention_counts_each_catalog_on_its_own(store: UsageStore) -> None:
    now = 100 * DAY
    quiet = [store.add_task(task("quiet", created=now - 10 - i)) for i in range(3)]  # at the max
    busy = [store.add_task(task("busy", created=now - i)) for i in range(4)]  # one over it
    assert store.prune(Retention(max_tasks=3, max_age_days=30), now=now) == 1
    assert [row["id"] for row in store.export()] == quiet + busy[1:]  # busy's oldest went
    assert store.status().catalogs == {"busy": 3, "quiet": 3}


def test_a_task_holds_at_most_max_calls_call_rows(store: UsageStore) -> None:
    full, other = store.add_task(task()), store.add_task(task())
    assert [store.add_call(call(full), max_calls=3) for _ in range(4)] == [True] * 3 + [False]
    assert store.add_call(call(other, outcome="tool_error"), max_calls=3) is True
    assert store.add_call(call(10_000), max_calls=3) is False  # no such task: nothing logged
    calls = {row["id"]: len(row["calls"]) for row in store.export()}
    assert calls == {full: 3, other: 1}


def test_each_task_keeps_its_principal_and_forget_takes_one_principals(store: UsageStore) -> None:
    mine = store.add_task(replace(task(), principal="alice"))
    store.add_call(call(mine))
    theirs = store.add_task(task())  # no principal named: the local one
    store.add_call(call(theirs, outcome="tool_error"))
    assert [(e.task_id, e.principal) for e in store.evidence("default", "m", limit=10)] == [
        (mine, "alice")
    ]
    assert store.status().principals == {
        "alice": {"tasks": 1, "calls": 1},
        "stdio": {"tasks": 1, "calls": 1},
    }
    assert [row["id"] for row in store.export(principal="alice")] == [mine]
    assert store.forget(principal="alice") == 1
    assert [(row["id"], row["principal"]) for row in store.export()] == [(theirs, "stdio")]
