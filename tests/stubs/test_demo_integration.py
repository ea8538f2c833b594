"""Stubs over the real demo federation: mypy-clean, importable, and callable through serve."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.cli.main import build_app
from cartograph.stubs import runtime
from tests.stubs.support import REPO, mypy_strict

TIME_SERVER = REPO / "demo" / ".runtime" / "time" / "bin" / "mcp-server-time"
runner = CliRunner()


def _cli(*args: str) -> str:
    result = runner.invoke(build_app(), list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.integration
@pytest.mark.slow
def test_generated_stub_calls_the_demo_time_server_through_serve(tmp_path: Path) -> None:
    if not TIME_SERVER.exists():
        pytest.skip(f"{TIME_SERVER} not installed; run scripts/setup")
    config = tmp_path / "cartograph.toml"
    config.write_text(
        'state_dir = "state"\n\n[index]\nembedder = "fake"\n\n'
        f"[servers.time]\ncommand = {json.dumps(str(TIME_SERVER))}\n"
        'args = ["--local-timezone", "UTC"]\n'
    )
    _cli("keys", "init", "--config", str(config))
    _cli("bootstrap", "--config", str(config))
    _cli("stubs", "--config", str(config), "--out", str(tmp_path / "out"), "--package", "demo_time")
    sys.path.insert(0, str(tmp_path / "out"))
    runtime.connect(
        command=(sys.executable, "-m", "cartograph.cli.main", "serve", "--config", str(config))
    )
    try:
        time_stubs = importlib.import_module("demo_time.time")
        answer = time_stubs.get_current_time(timezone="Europe/Paris")
        assert answer["timezone"] == "Europe/Paris"  # structured, typed by its output schema
    finally:
        runtime.use(None)
        sys.path.remove(str(tmp_path / "out"))
        for name in [n for n in sys.modules if n.split(".")[0] == "demo_time"]:
            del sys.modules[name]


DEMO_CONFIG = REPO / "demo" / "cartograph.toml"


@pytest.mark.integration
@pytest.mark.slow
def test_stubs_for_the_whole_demo_federation_pass_mypy_strict_and_import(tmp_path: Path) -> None:
    if not (REPO / "demo" / "node_modules").is_dir():
        pytest.skip("demo federation not installed; run scripts/setup")
    out = tmp_path / "out"
    summary = json.loads(
        _cli(
            "stubs",
            "--config",
            str(DEMO_CONFIG),
            "--out",
            str(out),
            "--package",
            "demo",
            "--json",
            "--unsafe-throwaway-key",  # the demo's state dir holds no cards until bootstrap
        )
    )
    assert summary["tools"] >= 100 and len(summary["modules"]) >= 10, summary["tools"]
    run = mypy_strict(out, "demo")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    sys.path.insert(0, str(out))
    try:
        for module in importlib.import_module("demo").__all__:
            importlib.import_module(f"demo.{module}")
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n.split(".")[0] == "demo"]:
            del sys.modules[name]
