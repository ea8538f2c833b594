"""Installing the demo federation outside a checkout (`cartograph demo --setup`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.demo import federation
from cartograph.errors import DemoError


def test_a_checkout_reads_its_own_demo_folder_as_the_recipe() -> None:
    recipe = federation.recipe_dir()
    assert (recipe / "cartograph.toml").is_file()
    assert sorted(p.name for p in (recipe / "python").glob("*.txt"))


def test_setup_without_node_names_what_to_install_and_keeps_the_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    home = tmp_path / "demo"
    with pytest.raises(DemoError) as caught:
        federation.install(home, lambda _step: None)
    assert caught.value.code == "demo_needs_node"
    assert "Node.js" in caught.value.message
    assert (home / "cartograph.toml").is_file()  # a re-run after installing Node starts here


def test_an_uninstalled_home_tells_the_user_to_run_setup(tmp_path: Path) -> None:
    with pytest.raises(DemoError) as caught:
        federation.installed_config(tmp_path / "nowhere")
    assert caught.value.code == "demo_not_installed"
    assert "cartograph demo --setup" in caught.value.message


def test_the_default_home_follows_xdg_data_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert federation.default_home() == tmp_path / "cartograph" / "demo"
