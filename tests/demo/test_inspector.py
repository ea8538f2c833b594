"""The MCP Inspector CLI, a real third-party client, drives `cartograph serve` on the demo."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cartograph.demo.loopback import DEMO_HTTP_PORT_ENV
from tests.demo.support import CLI, CONFIG, ROOT

LAUNCHER = (
    ROOT / ".tools/inspector/node_modules/@modelcontextprotocol/inspector"
    / "clients/launcher/build/index.js"
)  # fmt: skip

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        not LAUNCHER.exists(),
        reason="Inspector CLI not installed: run scripts/setup.d/40-inspector.sh",
    ),
]


def inspect(state: Path, port: int, *args: str) -> dict[str, Any]:
    serve = [*CLI, "serve", "--config", str(CONFIG), "--state-dir", str(state)]
    env = ["-e", f"{DEMO_HTTP_PORT_ENV}={port}"]
    command = ["node", str(LAUNCHER), "--cli", *env, *args, "--", *serve]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def test_inspector_lists_the_proxy_tools_and_run_over_the_demo_federation(
    attested_state: Path, http_port: int
) -> None:
    listed = inspect(attested_state, http_port, "--method", "tools/list")
    # The demo config turns code mode on: `run` follows the three tools.
    assert [t["name"] for t in listed["tools"]] == ["discover", "status", "call", "run"]


def test_inspector_discovers_the_time_tool_over_the_demo_federation(
    attested_state: Path, http_port: int
) -> None:
    result = inspect(
        attested_state, http_port,
        "--method", "tools/call", "--tool-name", "discover",
        "--tool-arg", "task=what time is it in Tokyo", "--tool-arg", "k=5",
    )  # fmt: skip
    assert result["isError"] is False
    found = [(t["server"], t["tool"]) for t in result["structuredContent"]["tools"]]
    assert ("time", "get_current_time") in found
    assert "get_current_time" in result["content"][0]["text"]
