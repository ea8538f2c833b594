"""``connect`` never writes when asked to print, and never points a client at a missing config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.cli.app import EXIT_CONFIG
from cartograph.cli.connect import PROJECT_FILE
from cartograph.cli.main import build_app
from tests.cli.support import error_code
from tests.http.support import assemble, serving

runner = CliRunner()


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code", "cursor", "vscode"])
def test_connect_url_with_print_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "client.json"
    before = '{\n  "mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}\n}\n'
    target.write_text(before)
    with serving(assemble(("alpha",)).app) as base:
        result = runner.invoke(
            build_app(),
            ["connect", "--url", base, "--client", client, "--target", str(target), "--print"],
        )
    assert result.exit_code == 0, result.output
    assert target.read_text() == before
    assert not (tmp_path / PROJECT_FILE).exists()
    assert not target.with_name(target.name + ".bak").exists()
    printed = json.loads(result.stdout)
    assert "cartograph" in next(iter(printed.values()))


def test_connect_with_a_missing_config_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / ".mcp.json"
    result = runner.invoke(
        build_app(),
        [
            "connect",
            "--client",
            "claude-code",
            "--config",
            str(tmp_path / "nosuch.toml"),
            "--target",
            str(target),
        ],
    )
    assert result.exit_code == EXIT_CONFIG
    assert error_code(result) == "config_missing"
    assert not target.exists()
