"""``cartograph stubs`` in-process, from a catalog snapshot."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cartograph.catalog import save_catalog
from cartograph.cli.app import EXIT_CARDS, EXIT_OTHER
from cartograph.cli.main import build_app
from cartograph.cli.serve import THROWAWAY
from tests.cli.support import error_code
from tests.stubs.catalogs import awkward_catalog

runner = CliRunner()


def _snapshot(tmp_path: Path) -> tuple[Path, Path]:
    catalog = tmp_path / "catalog.json"
    save_catalog(awkward_catalog(), catalog)
    config = tmp_path / "cartograph.toml"
    config.write_text('state_dir = "state"\n\n[index]\nembedder = "fake"\n')
    return catalog, config


def _stubs_args(tmp_path: Path) -> list[str]:
    catalog, config = _snapshot(tmp_path)
    return [
        "stubs",
        "--catalog",
        str(catalog),
        "--config",
        str(config),
        "--out",
        str(tmp_path / "out"),
    ]


def test_stubs_command_writes_the_package_and_reports_it_as_json(tmp_path: Path) -> None:
    args = _stubs_args(tmp_path)
    result = runner.invoke(
        build_app(), [*args, "--server", "import", "--package", "agent_tools", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["tools"] == 1
    assert [m["module"] for m in summary["modules"]] == ["import_"]
    assert (tmp_path / "out" / "agent_tools" / "import_.py").is_file()
    assert "`import_`" in (tmp_path / "out" / "agent_tools" / "README.md").read_text()


def test_only_discovered_keeps_the_top_k_tools(tmp_path: Path) -> None:
    args = _stubs_args(tmp_path)
    result = runner.invoke(
        build_app(), [*args, "--only-discovered", "weather in a city", "-k", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert 1 <= json.loads(result.stdout)["tools"] <= 2  # an abstention shows fewer


def test_unknown_server_exits_with_the_error_code(tmp_path: Path) -> None:
    args = _stubs_args(tmp_path)
    result = runner.invoke(build_app(), [*args, "--server", "nope"])
    assert result.exit_code == EXIT_OTHER
    assert error_code(result) == "stubs_unknown_server"


def _live_config(tmp_path: Path) -> Path:
    from tests.helpers.support import scriptable, toml_for

    config = tmp_path / "cartograph.toml"
    config.write_text(toml_for(tmp_path / "state", scriptable("calc")))
    return config


def test_without_cards_or_the_flag_stubs_names_bootstrap_instead_of_a_throwaway_key(
    tmp_path: Path,
) -> None:
    config = _live_config(tmp_path)
    assert runner.invoke(build_app(), ["keys", "init", "--config", str(config)]).exit_code == 0

    result = runner.invoke(
        build_app(), ["stubs", "--config", str(config), "--out", str(tmp_path / "out")]
    )

    assert result.exit_code == EXIT_CARDS and error_code(result) == "no_cards"
    assert "cartograph bootstrap" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_flag_attests_the_live_federation_in_memory_and_says_so(tmp_path: Path) -> None:
    config = _live_config(tmp_path)
    args = ["stubs", "--config", str(config), "--out", str(tmp_path / "out")]

    result = runner.invoke(build_app(), [*args, "--unsafe-throwaway-key", "--json"])

    assert result.exit_code == 0, result.output
    assert THROWAWAY in " ".join(result.stderr.split())
    assert json.loads(result.stdout)["cards"].startswith("template cards attested in memory")
