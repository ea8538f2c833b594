"""The Rift baseline gate: unchanged federations pass, a new confusable tool fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cartograph.cli.app import EXIT_CONFIG
from cartograph.cli.main import build_app
from cartograph.cli.rift import EXIT_GATE_FAILED
from cartograph.rift.gate import Baseline
from tests.cli.support import error_code
from tests.rift.support import CONFUSABLE, listed_tool


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CARTOGRAPH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)


def _rift(tmp_path: Path, body: dict[str, Any], *extra: str) -> Result:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(body))
    args = ["rift", "--catalog", str(catalog), "--embedder", "fake", *extra]
    return CliRunner().invoke(build_app(), args)


def _with_confusable_tool(body: dict[str, Any]) -> dict[str, Any]:
    """A third weather tool with the same text and argument: it joins the HIGH cluster."""
    grown = copy.deepcopy(body)
    grown["servers"].append(
        {
            "name": "meteo",
            "description": "Weather service",
            "tools": [listed_tool("get_weather", "Get the weather for a city.")],
        }
    )
    return grown


def test_a_missing_baseline_is_recorded_and_the_gate_passes(tmp_path: Path) -> None:
    baseline = tmp_path / "rift-baseline.json"
    result = _rift(tmp_path, CONFUSABLE, "--baseline", str(baseline), "--fail-on", "high")
    assert result.exit_code == 0, result.output
    recorded = Baseline.model_validate_json(baseline.read_text())
    assert [c.risk for c in recorded.clusters] == ["HIGH"]
    assert recorded.clusters[0].members == ("forecast/getWeather", "weather/get_weather")


def test_baseline_gate_passes_unchanged_and_fails_naming_a_new_confusable_tool(
    tmp_path: Path,
) -> None:
    baseline = str(tmp_path / "rift-baseline.json")
    assert _rift(tmp_path, CONFUSABLE, "--baseline", baseline).exit_code == 0

    unchanged = _rift(tmp_path, CONFUSABLE, "--baseline", baseline, "--fail-on", "high")
    assert unchanged.exit_code == 0, unchanged.output
    assert "rift gate passed" in unchanged.stderr

    grown = _rift(
        tmp_path, _with_confusable_tool(CONFUSABLE), "--baseline", baseline, "--fail-on", "high"
    )
    assert grown.exit_code == EXIT_GATE_FAILED, grown.output
    assert "new HIGH cluster" in grown.stderr
    assert "new in it: meteo/get_weather" in grown.stderr

    accepted = _rift(
        tmp_path, _with_confusable_tool(CONFUSABLE), "--baseline", baseline, "--update-baseline"
    )
    assert accepted.exit_code == 0 and "baseline updated" in accepted.stderr
    again = _rift(
        tmp_path, _with_confusable_tool(CONFUSABLE), "--baseline", baseline, "--fail-on", "high"
    )
    assert again.exit_code == 0, again.output


def test_a_risk_that_rose_since_the_baseline_fails(tmp_path: Path) -> None:
    baseline = tmp_path / "rift-baseline.json"
    assert _rift(tmp_path, CONFUSABLE, "--baseline", str(baseline)).exit_code == 0
    body = json.loads(baseline.read_text())
    body["clusters"][0]["risk"] = "MEDIUM"
    baseline.write_text(json.dumps(body))
    result = _rift(tmp_path, CONFUSABLE, "--baseline", str(baseline), "--fail-on", "high")
    assert result.exit_code == EXIT_GATE_FAILED
    assert "risk rose MEDIUM → HIGH" in result.stderr


def test_a_malformed_baseline_is_a_coded_error(tmp_path: Path) -> None:
    baseline = tmp_path / "rift-baseline.json"
    baseline.write_text('{"version": 7}')
    result = _rift(tmp_path, CONFUSABLE, "--baseline", str(baseline), "--fail-on", "high")
    assert result.exit_code == EXIT_CONFIG
    assert error_code(result) == "rift_bad_baseline"


SAME_NAME = {
    "servers": [
        {
            "name": "weather",
            "description": "Weather data",
            "tools": [listed_tool("get_weather", "Get the weather for a city.")],
        },
        {
            "name": "forecast",
            "description": "Forecasts",
            "tools": [
                listed_tool("get_weather", "Get the weather for a city."),
                listed_tool(
                    "list_alerts", "Storm and flood warnings issued by the national service."
                ),
            ],
        },
        {
            "name": "git",
            "description": "Version control",
            "tools": [listed_tool("commit", "Record staged changes to the repository history.")],
        },
    ]
}


def test_the_suggested_deny_rule_clears_the_cluster_on_the_next_run(tmp_path: Path) -> None:
    first = _rift(tmp_path, SAME_NAME, "--json")
    (cluster,) = json.loads(first.stdout)["clusters"]
    (deny,) = [s for s in cluster["suggestions"] if s["kind"] == "deny"]
    config = tmp_path / "cartograph.toml"
    config.write_text(f'state_dir = "state"\n{deny["fix"]}\n')

    again = _rift(tmp_path, SAME_NAME, "--config", str(config), "--fail-on", "high", "--json")

    assert again.exit_code == 0, again.output
    body = json.loads(again.stdout)
    assert body["clusters"] == []
    assert "1 tool(s) left out" in body["cards"]


def test_disabling_a_duplicate_server_as_suggested_removes_its_tools(tmp_path: Path) -> None:
    twice = copy.deepcopy(SAME_NAME)
    twice["servers"][1]["tools"] = copy.deepcopy(twice["servers"][0]["tools"])  # now twins
    names = ("weather", "forecast", "git")
    servers = "".join(f'[servers."{n}"]\ncommand = "true"\n' for n in names)
    config = tmp_path / "cartograph.toml"
    config.write_text(f'state_dir = "state"\n{servers}')
    found = json.loads(_rift(tmp_path, twice, "--config", str(config), "--json").stdout)
    (dup,) = found["duplicates"]
    assert dup["fix"] == '[servers."weather"]\nenabled = false'

    config.write_text(config.read_text().replace('[servers."weather"]\n', dup["fix"] + "\n"))
    after = json.loads(_rift(tmp_path, twice, "--config", str(config), "--json").stdout)

    assert after["duplicates"] == [] and after["clusters"] == []
