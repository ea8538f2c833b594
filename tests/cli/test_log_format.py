"""``cartograph --debug --log-format json CMD``: any command's stderr logs as JSON objects.

The options sit on the root command; ``serve`` keeps its own (they win) and still
reads ``[logging] format``. In-process runs restore the root logger afterwards.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cartograph.cli.app import EXIT_USAGE
from cartograph.cli.main import build_app
from tests.cli.support import error_code
from tests.helpers.support import scriptable, toml_for

runner = CliRunner()


@pytest.fixture(autouse=True)
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)


def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CARTOGRAPH_CONFIG", raising=False)
    return runner.invoke(build_app(), list(args))


def json_lines(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def test_a_global_json_log_format_makes_a_commands_logs_json_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(toml_for(tmp_path / "state", scriptable("calc")))
    call = ["call", "calc", "echo", '{"text": "x"}', "--config", str(config)]
    args = ["--debug", "--log-format", "json", *call, "--unsafe-throwaway-key"]
    result = invoke(tmp_path, monkeypatch, *args)
    assert result.exit_code == 0, result.output
    logged = json_lines(result.stderr)
    assert any(line["logger"].startswith("cartograph.") for line in logged), result.stderr
    assert any(line["level"] == "DEBUG" for line in logged), result.stderr
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in logged)


def test_with_json_logs_a_commands_error_is_one_json_object_with_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(tmp_path, monkeypatch, "--log-format", "json", "servers", "--config", "x.toml")
    assert result.exit_code == 3
    (line,) = result.stderr.strip().splitlines()
    logged = json.loads(line)
    assert (logged["level"], logged["code"]) == ("ERROR", "config_missing")


def test_with_json_logs_a_usage_error_is_a_json_object_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(tmp_path, monkeypatch, "--log-format", "json", "rift", "--bogus")
    assert result.exit_code == EXIT_USAGE
    (line,) = result.stderr.strip().splitlines()
    assert json.loads(line)["code"] == "usage" and "--bogus" in json.loads(line)["message"]


def test_without_a_log_option_errors_stay_the_text_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke(tmp_path, monkeypatch, "--log-format", "json", "servers", "--config", "x.toml")
    result = invoke(tmp_path, monkeypatch, "servers", "--config", "x.toml")
    assert error_code(result) == "config_missing"


def test_an_unknown_global_log_format_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(tmp_path, monkeypatch, "--log-format", "xml", "version")
    assert result.exit_code == EXIT_USAGE


def serve_debug_stderr(tmp_path: Path, *args: str, logging_format: str | None = None) -> bytes:
    """stderr of a stdio ``serve`` that is handed one ``initialize`` and then EOF."""
    config = tmp_path / "cartograph.toml"
    text = toml_for(tmp_path / "state", scriptable("calc"))
    if logging_format is not None:
        text += f'\n[logging]\nformat = "{logging_format}"\n'
    config.write_text(text)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    command = [sys.executable, "-m", "cartograph.cli.main", *args]
    command = [c.replace("CONFIG", str(config)) for c in command]
    done = subprocess.run(
        command,
        input=(json.dumps(initialize) + "\n").encode(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["id"] == 1
    return done.stderr


SERVE = ("serve", "--config", "CONFIG", "--unsafe-throwaway-key")


@pytest.mark.parametrize(
    "args",
    [
        ("--debug", "--log-format", "json", *SERVE),
        (*SERVE, "--debug", "--log-format", "json"),
        ("--log-format", "json", *SERVE, "--debug"),
    ],
    ids=["global", "serve", "mixed"],
)
def test_serve_logs_json_with_the_global_or_its_own_options(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    stderr = serve_debug_stderr(tmp_path, *args).decode()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert any(json.loads(line)["level"] == "DEBUG" for line in lines if line.startswith("{"))
    assert all(line.startswith("{") for line in lines), stderr


def test_serve_still_reads_the_configs_logging_format_and_a_global_flag_overrides_it(
    tmp_path: Path,
) -> None:
    from_config = serve_debug_stderr(tmp_path, *SERVE, "--debug", logging_format="json")
    assert all(line.startswith(b"{") for line in from_config.splitlines() if line.strip())
    overridden = serve_debug_stderr(
        tmp_path, "--log-format", "text", "--debug", *SERVE, logging_format="json"
    )
    assert b" DEBUG " in overridden and not overridden.startswith(b"{")
