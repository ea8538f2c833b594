"""One connection per usage log per process, and readers that cannot lose a row (P-LEARN-2).

SQLite's locks are POSIX ``fcntl`` locks: closing *any* descriptor of the file
drops every lock the process holds on it. A second open/close of the log (one
per catalog) silently released the server's shared lock, so the next reader
process to close thought itself last, checkpointed and deleted the WAL the
server still wrote into: later rows were invisible, then lost at a kill.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cartograph.errors import UsageLogError
from cartograph.learning import sqlite as usage_sqlite
from cartograph.learning.sqlite import SCHEMA_VERSION, SqliteUsageStore
from cartograph.learning.store import CallRecord, SurfacedTool, TaskRecord

LIMIT = 60.0
"""Seconds before a wait gives up: a failure bound, never a speed target."""
FORGET = (sys.executable, "-m", "cartograph.cli.main", "learning", "forget")


def task(catalog: str = "a", text: str = "read a file") -> TaskRecord:
    surfaced = (SurfacedTool("fs", "read_file", "d"),)
    return TaskRecord(catalog, "s", text, "m", np.ones(8, dtype=np.float32), surfaced, 1.0)


def descriptors_on(path: Path) -> int:
    """How many of this process's file descriptors are open on ``path``."""
    target = path.resolve()
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if Path(os.readlink(f"/proc/self/fd/{fd}")) == target:
                count += 1
        except OSError:
            continue
    return count


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


@needs_proc
@pytest.mark.promise("P-LEARN-2")
def test_stores_of_one_log_share_one_connection_and_open_no_second_descriptor(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state" / "usage.sqlite3"
    first = SqliteUsageStore(path)
    try:
        held = descriptors_on(path)
        assert held >= 1
        spelled_otherwise = SqliteUsageStore(tmp_path / "state" / ".." / "state" / "usage.sqlite3")
        reader = SqliteUsageStore(path, read_only=True)
        assert descriptors_on(path) == held  # nothing opened (nor closed) beside SQLite's own
        assert usage_sqlite.open_handles() == 1
        spelled_otherwise.add_task(task("b"))
        spelled_otherwise.close()
        reader.close()
        assert descriptors_on(path) == held  # the connection stays with its last store
        assert first.status().catalogs == {"b": 1}
    finally:
        first.close()
    assert usage_sqlite.open_handles() == 0
    assert descriptors_on(path) == 0


_READER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from cartograph.learning.sqlite import SqliteUsageStore
    store = SqliteUsageStore(Path(sys.argv[1]))  # writable: it could checkpoint and delete
    print(store.status().tasks)
    store.close()
    """
)


def read_elsewhere(path: Path) -> int:
    """Open the log writable in another process, count its tasks, close it."""
    done = subprocess.run(
        [sys.executable, "-c", _READER, str(path)], capture_output=True, text=True, timeout=LIMIT
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.promise("P-LEARN-2")
def test_attack_a_reader_closing_while_two_catalogs_hold_the_log_keeps_their_wal(
    tmp_path: Path,
) -> None:
    path = tmp_path / "usage.sqlite3"
    a, b = SqliteUsageStore(path), SqliteUsageStore(path)  # two catalogs of one process
    try:
        a.add_task(task("a"))
        assert read_elsewhere(path) == 1
        assert Path(f"{path}-wal").exists()  # the reader knew it was not the last
        b.add_task(task("b"))
        a.add_task(task("a"))
        assert read_elsewhere(path) == 3  # and every later row stays visible to readers
    finally:
        a.close()
        b.close()


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from cartograph.learning.sqlite import SqliteUsageStore
    from cartograph.learning.store import CallRecord, SurfacedTool, TaskRecord
    path = Path(sys.argv[1])
    stores = {"a": SqliteUsageStore(path), "b": SqliteUsageStore(path)}  # two catalogs
    vector = np.ones(64, dtype=np.float32)
    for i in range(1_000_000):
        catalog = "ab"[i % 2]
        store = stores[catalog]
        record = TaskRecord(catalog, "s", f"task {i}", "m", vector,
                            (SurfacedTool("fs", "read_file", "d"),), float(i))
        tid = store.add_task(record)
        store.add_call(CallRecord(tid, "fs", "read_file", "d", "ok", float(i)))
        print(tid, flush=True)
    """
)


class Acknowledged:
    """The ids a writer process printed (each after its rows committed), read as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        self._stdout = process.stdout
        self.ids: list[int] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        for line in self._stdout:
            with self._changed:
                self.ids.append(int(line))
                self._changed.notify_all()

    def wait_for(self, count: int) -> int:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.ids) >= count, LIMIT)
            return len(self.ids)

    def finish(self) -> set[int]:
        self._thread.join(LIMIT)
        return set(self.ids)


@pytest.mark.promise("P-LEARN-2")
def test_attack_readers_while_two_catalogs_write_then_a_kill_loses_no_acknowledged_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "usage.sqlite3"
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True
    ) as writer:
        acked = Acknowledged(writer)
        try:
            for round_ in range(1, 4):
                seen = acked.wait_for(100 * round_)
                assert read_elsewhere(path) >= seen  # a reader sees every acknowledged row
            acked.wait_for(len(acked.ids) + 200)  # rows written after the last reader left
        finally:
            writer.kill()  # SIGKILL: no cleanup, likely mid-transaction
            writer.wait(timeout=LIMIT)
    ids = acked.finish()
    store = SqliteUsageStore(path)  # quick_check on open: raises if corrupt
    try:
        logged = {row["id"]: row for row in store.export()}
        assert ids <= set(logged)
        assert all(len(logged[i]["calls"]) == 1 for i in ids)
    finally:
        store.close()


def test_a_read_only_store_refuses_writes_and_never_migrates(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    path.touch(mode=0o600)  # an empty file: schema 0
    reader = SqliteUsageStore(path, read_only=True)
    try:
        assert reader.schema_version == 0
        with pytest.raises(UsageLogError) as info:
            reader.add_task(task())
        assert info.value.code == "usage_log_io"
    finally:
        reader.close()
    assert path.stat().st_size == 0


def test_a_writable_store_upgrades_a_shared_read_only_connection(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    SqliteUsageStore(path).close()
    reader = SqliteUsageStore(path, read_only=True)
    writer = SqliteUsageStore(path)
    try:
        writer.add_task(task())
        assert reader.status().tasks == 1 and usage_sqlite.open_handles() == 1
        with pytest.raises(UsageLogError):
            reader.forget()  # still a reader, whatever its connection can do
    finally:
        reader.close()
        writer.close()


def test_a_read_only_open_of_a_log_newer_than_this_build_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "usage.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UsageLogError) as info:
        SqliteUsageStore(path, read_only=True)
    assert info.value.code == "usage_log_newer"
    assert usage_sqlite.open_handles() == 0


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "state" / "usage.sqlite3"
    store = SqliteUsageStore(path)
    store.add_call(CallRecord(store.add_task(task()), "fs", "read_file", "d", "ok", 2.0))
    store.close()
    yield tmp_path


def test_status_and_export_open_the_log_read_only(
    seeded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from cartograph.cli.main import build_app

    opened: list[bool] = []
    real = usage_sqlite.acquire

    def spy(path: Path, *, writable: bool) -> usage_sqlite._Handle:
        opened.append(writable)
        return real(path, writable=writable)

    monkeypatch.setattr(usage_sqlite, "acquire", spy)
    config = seeded / "cartograph.toml"
    config.write_text(f'state_dir = "{seeded / "state"}"\n')
    app = build_app()
    status = CliRunner().invoke(app, ["learning", "status", "--config", str(config), "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["tasks"] == 1
    exported = CliRunner().invoke(app, ["learning", "export", "--config", str(config)])
    assert exported.exit_code == 0, exported.output
    forgot = CliRunner().invoke(app, ["learning", "forget", "--config", str(config), "--json"])
    assert json.loads(forgot.stdout) == {"deleted_tasks": 1}
    assert opened == [False, False, True]


@pytest.mark.promise("P-LEARN-2")
def test_attack_forget_everything_from_another_process_while_two_catalogs_hold_the_log(
    tmp_path: Path,
) -> None:
    """``forget`` writes (and VACUUMs) through SQLite's locks; the holders keep working."""
    state = tmp_path / "state"
    config = tmp_path / "cartograph.toml"
    config.write_text(f'state_dir = "{state}"\n')
    path = usage_sqlite.usage_log_path(state)
    a, b = SqliteUsageStore(path), SqliteUsageStore(path)
    try:
        for catalog in ("a", "b", "a"):
            a.add_task(task(catalog))
        done = subprocess.run(
            [*FORGET, "--config", str(config), "--json"],
            capture_output=True,
            text=True,
            timeout=LIMIT,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"deleted_tasks": 3}
        kept = b.add_task(task("b"))
        assert [row["id"] for row in a.export()] == [kept]
        assert read_elsewhere(path) == 1
    finally:
        a.close()
        b.close()
