"""The MCP Inspector CLI (a real third-party client) drives `cartograph serve` over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.support import scriptable, toml_for

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / ".tools/inspector/node_modules/@modelcontextprotocol/inspector"
LAUNCHER = PACKAGE / "clients/launcher/build/index.js"

pytestmark = pytest.mark.skipif(
    not LAUNCHER.exists(), reason="Inspector CLI not installed: run scripts/setup.d/40-inspector.sh"
)


def inspect(config: Path, *args: str) -> dict[str, object]:
    serve = [sys.executable, "-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key"]
    command = ["node", str(LAUNCHER), "--cli", *args, "--", *serve, "--config", str(config)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=ROOT, check=True
    )
    parsed: dict[str, object] = json.loads(done.stdout)
    return parsed


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "cartograph.toml"
    path.write_text(toml_for(tmp_path / "state", scriptable("calc")))
    return path


def test_inspector_lists_exactly_the_three_proxy_tools(config: Path) -> None:
    listed = inspect(config, "--method", "tools/list")
    tools = listed["tools"]
    assert isinstance(tools, list)
    assert [t["name"] for t in tools] == ["discover", "status", "call"]


def test_inspector_calls_an_upstream_tool_through_call(config: Path) -> None:
    result = inspect(
        config,
        "--method", "tools/call", "--tool-name", "call",
        "--tool-arg", "server=calc", "--tool-arg", "tool=add",
        "--tool-arg", 'arguments={"a": 20, "b": 22}',
    )  # fmt: skip
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "42"}]
