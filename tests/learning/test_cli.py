"""`cartograph learning status | forget | export` and `cartograph eval --learning`, in-process."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from cartograph.cli.app import EXIT_USAGE
from cartograph.cli.learning import parse_date
from cartograph.cli.main import build_app
from cartograph.learning.sqlite import SqliteUsageStore, usage_log_path
from cartograph.learning.store import CallRecord, SurfacedTool, TaskRecord
from tests.cli.support import error_code
from tests.eval.support import write_fixture


def config(tmp_path: Path) -> Path:
    path = tmp_path / "cartograph.toml"
    path.write_text(
        f'state_dir = "{tmp_path / "state"}"\n[learning]\nenabled = true\nmax_tasks = 500\n'
    )
    return path


def seed_log(tmp_path: Path) -> None:
    store = SqliteUsageStore(usage_log_path(tmp_path / "state"))
    vector = np.ones(8, dtype=np.float32)
    for day, catalog in ((1, "a"), (10, "a"), (20, "b")):
        created = parse_date(f"2026-01-{day:02d}")
        surfaced = (SurfacedTool("fs", "read_file", "d"),)
        task_id = store.add_task(
            TaskRecord(catalog, "s", f"task {day}", "m", vector, surfaced, created)
        )
        store.add_call(CallRecord(task_id, "fs", "read_file", "d", "ok", created + 1))
    store.close()


def run(*args: str) -> Any:
    return CliRunner().invoke(build_app(), list(args))


def test_status_reports_counts_per_catalog_and_the_retention(tmp_path: Path) -> None:
    seed_log(tmp_path)
    result = run("learning", "status", "--config", str(config(tmp_path)), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["tasks"] == 3 and data["calls"] == 3 and data["outcomes"] == {"ok": 3}
    assert data["catalogs"] == {"a": 2, "b": 1}
    assert data["oldest"] == "2026-01-01T00:00:00Z"
    assert data["retention"] == {
        "max_tasks": 500,
        "max_age_days": 90.0,
        "max_calls_per_task": 64,
        "max_evidence_per_minute": 30,
    }
    assert data["enabled"] is True and data["schema_version"] == 2


def test_forget_before_a_date_keeps_later_tasks(tmp_path: Path) -> None:
    seed_log(tmp_path)
    cfg = str(config(tmp_path))
    result = run("learning", "forget", "--before", "2026-01-15", "--config", cfg, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"deleted_tasks": 2}
    status = json.loads(run("learning", "status", "--config", cfg, "--json").stdout)
    assert status["catalogs"] == {"b": 1}


def test_forget_with_a_bad_date_fails_with_its_code(tmp_path: Path) -> None:
    result = run(
        "learning", "forget", "--before", "last tuesday", "--config", str(config(tmp_path))
    )
    assert result.exit_code == EXIT_USAGE
    assert error_code(result) == "bad_date"


def test_export_writes_one_json_line_per_task_to_a_private_file(tmp_path: Path) -> None:
    seed_log(tmp_path)
    out = tmp_path / "usage.jsonl"
    result = run(
        "learning", "export", "--catalog", "a", "--out", str(out), "--config", str(config(tmp_path))
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task"] for r in rows] == ["task 1", "task 10"]
    assert rows[0]["calls"][0] == {
        "tool": "fs/read_file",
        "outcome": "ok",
        "time": "2026-01-01T00:00:01Z",
    }
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_parse_date_reads_dates_and_iso_times_as_utc() -> None:
    assert parse_date("1970-01-02") == 86_400.0
    assert parse_date("1970-01-01T01:00:00+01:00") == 0.0


def test_eval_learning_reports_zero_shot_and_both_feedback_modes_with_a_curve(
    tmp_path: Path,
) -> None:
    catalog, queries = write_fixture(tmp_path)
    args = ["eval", "--learning", "--catalog", str(catalog), "--queries", str(queries)]
    result = run(*args, "--embedder", "fake", "--method", "bm25", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert list(report["rows"]) == ["zero-shot", "surfaced", "oracle"]
    assert report["queries"] == 2 and report["noise"] == 0.2 and report["seed"] == 0
    assert report["curve"][0]["logged_from"] == 0
    text = run(*args, "--embedder", "fake", "--method", "bm25", "--feedback", "oracle")
    assert text.exit_code == 0, text.output
    assert "learning curve" in text.stdout


@pytest.mark.parametrize(
    ("flag", "value", "code"),
    [("--feedback", "psychic", "bad_feedback"), ("--noise", "1.0", "bad_noise")],
)
def test_eval_learning_refuses_bad_options_with_their_code(
    tmp_path: Path, flag: str, value: str, code: str
) -> None:
    catalog, queries = write_fixture(tmp_path)
    args = ["eval", "--learning", "--catalog", str(catalog), "--queries", str(queries)]
    result = run(*args, "--embedder", "fake", flag, value)
    assert result.exit_code == EXIT_USAGE
    assert error_code(result) == code


def test_reading_commands_never_create_a_log(tmp_path: Path) -> None:
    cfg = str(config(tmp_path))
    status = json.loads(run("learning", "status", "--config", cfg, "--json").stdout)
    assert status["tasks"] == 0 and status["schema_version"] == 0
    assert json.loads(run("learning", "forget", "--config", cfg, "--json").stdout) == {
        "deleted_tasks": 0
    }
    assert run("learning", "export", "--config", cfg).stdout == ""
    assert not (tmp_path / "state").exists()


def test_status_counts_each_principal_and_forget_takes_one_principals(tmp_path: Path) -> None:
    seed_log(tmp_path)  # three tasks of the local principal
    store = SqliteUsageStore(usage_log_path(tmp_path / "state"))
    vector = np.ones(8, dtype=np.float32)
    store.add_task(TaskRecord("a", "s", "theirs", "m", vector, (), 5.0, principal="mallory"))
    store.close()
    cfg = str(config(tmp_path))
    status = json.loads(run("learning", "status", "--config", cfg, "--json").stdout)
    assert status["principals"] == {
        "mallory": {"tasks": 1, "calls": 0},
        "stdio": {"tasks": 3, "calls": 3},
    }
    assert status["min_principals"] == 2 and status["retention"]["max_evidence_per_minute"] == 30
    exported = run("learning", "export", "--principal", "mallory", "--config", cfg)
    assert [json.loads(line)["task"] for line in exported.stdout.splitlines()] == ["theirs"]
    forgot = run("learning", "forget", "--principal", "mallory", "--config", cfg, "--json")
    assert json.loads(forgot.stdout) == {"deleted_tasks": 1}
    status = json.loads(run("learning", "status", "--config", cfg, "--json").stdout)
    assert list(status["principals"]) == ["stdio"] and status["tasks"] == 3
    table = run("learning", "status", "--config", cfg)
    assert "stdio 3 tasks/3 calls" in table.stdout
