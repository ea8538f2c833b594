"""The federation commands, in process: servers, tools, snapshot (live and from --catalog)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from cartograph.catalog.snapshot import load_catalog
from cartograph.cli.main import build_app

SCRIPTABLE = Path(__file__).resolve().parents[1] / "helpers" / "scriptable.py"
runner = CliRunner()


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "cartograph.toml"
    path.write_text(
        f"""
[servers.scripted]
command = "{sys.executable}"
args = ["{SCRIPTABLE}"]
connect_timeout = 30
[servers.broken]
command = "/nonexistent/cartograph-test-server"
"""
    )
    return path


def test_servers_json_reports_each_server_and_a_summary(tmp_path: Path) -> None:
    result = runner.invoke(build_app(), ["servers", "--config", str(_config(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    by_name = {s["name"]: s for s in body["servers"]}
    assert by_name["scripted"]["status"] == "connected"
    assert by_name["scripted"]["tool_count"] > 0
    assert by_name["broken"]["error"]["code"] == "upstream_command_not_found"
    assert body["summary"]["connected"] == 1
    assert body["summary"]["tools_list_bytes"] > 0


def test_snapshot_writes_a_catalog_that_loads_back(tmp_path: Path) -> None:
    out = tmp_path / "catalog.json"
    args = ["snapshot", "--config", str(_config(tmp_path)), "--out", str(out), "--json"]
    result = runner.invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    catalog = load_catalog(out)
    assert [s.name for s in catalog.servers] == ["scripted"]
    assert json.loads(result.stdout)["tools"] == catalog.tool_count


def test_tools_from_a_catalog_snapshot_needs_no_live_server(tmp_path: Path) -> None:
    snapshot = tmp_path / "catalog.json"
    snapshot.write_text(
        json.dumps({"servers": [{"name": "s", "tools": [{"name": "t", "description": "d"}]}]})
    )
    config = tmp_path / "cartograph.toml"
    config.write_text('[servers.never]\ncommand = "/nonexistent/x"\n')
    args = ["tools", "--config", str(config), "--catalog", str(snapshot), "--json"]
    result = runner.invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {
            "server": "s",
            "name": "t",
            "description": "d",
            "inputSchema": {"type": "object", "properties": {}},
            "denied_in": [],
        }
    ]


def test_snapshot_names_each_server_it_left_out_on_stderr(tmp_path: Path) -> None:
    out = tmp_path / "catalog.json"
    args = ["snapshot", "--config", str(_config(tmp_path)), "--out", str(out), "--json"]
    result = runner.invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert "upstream_command_not_found" in result.stderr
    assert "'broken'" in result.stderr
    assert json.loads(result.stdout)["servers"] == 1


def test_tools_for_one_server_starts_only_that_server(tmp_path: Path) -> None:
    args = ["tools", "--config", str(_config(tmp_path)), "--server", "scripted", "--json"]
    result = runner.invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert "broken" not in result.stderr  # never started, so never reported as skipped
    assert {t["server"] for t in json.loads(result.stdout)} == {"scripted"}
