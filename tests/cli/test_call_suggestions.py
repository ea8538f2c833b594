"""A mistyped tool name through a real upstream gets the close name, never a bare list."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.cli.main import build_app
from tests.helpers.support import SCRIPTABLE

runner = CliRunner()


def test_call_with_a_mistyped_tool_suggests_the_close_name(tmp_path: Path) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(
        f'state_dir = "state"\n[index]\nembedder = "fake"\n[defaults]\nprotocol = "legacy"\n'
        f"[servers.time]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SCRIPTABLE))}]\n"
    )
    args = ["--config", str(config), "--unsafe-throwaway-key"]
    result = runner.invoke(build_app(), ["call", "time", "ehco", '{"text": "x"}', *args])
    assert result.exit_code == 1, result.output
    assert "did you mean 'echo'?" in result.output


def test_discover_prints_whole_descriptions_when_piped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cartograph.catalog import save_catalog
    from cartograph.catalog.model import Catalog, ServerDef, ToolDef

    monkeypatch.chdir(tmp_path)
    long = (
        "Get the weather forecast for a city for the next seven days, with temperature, "
        "precipitation, wind speed and direction, humidity and the chance of thunderstorms."
    )
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tool = ToolDef(name="get_forecast", description=long, input_schema=schema)
    snapshot = tmp_path / "catalog.json"
    save_catalog(Catalog(servers=(ServerDef(name="weather", tools=(tool,)),)), snapshot)
    args = ["--catalog", str(snapshot), "--unsafe-throwaway-key", "--embedder", "fake"]
    result = runner.invoke(build_app(), ["discover", "weather forecast for a city", *args])
    assert result.exit_code == 0, result.output
    assert "thunderstorms" in result.stdout
