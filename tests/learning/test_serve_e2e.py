"""Learning end to end: the SDK's stdio client drives `cartograph serve` over a real upstream."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from cartograph.cli.main import build_app
from tests.helpers.support import scriptable, toml_for

SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")


def serve(config: Path) -> StdioServerParameters:
    # The whole environment: the SDK passes only a few variables by default, and the
    # child must import the same Cartograph as this test (PYTHONPATH).
    return StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(config)],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )


def ranked(found: Any) -> list[str]:
    return [t["tool"] for t in found.structured_content["tools"]]


def place(tools: list[str], tool: str) -> int:
    """1-based rank in a top-k list; k + 1 when absent."""
    return tools.index(tool) + 1 if tool in tools else len(tools) + 1


def status(config: Path) -> dict[str, Any]:
    result = CliRunner().invoke(
        build_app(), ["learning", "status", "--config", str(config), "--json"]
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


TASK = "increment the session counter"
SIMILAR = "increment the counter of this session"


@pytest.mark.anyio
async def test_a_called_tool_ranks_higher_for_a_later_similar_task(tmp_path: Path) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(toml_for(tmp_path / "state", scriptable("calc"), learning=True))
    with anyio.fail_after(120):
        async with Client(serve(config)) as client:
            zero_shot = ranked(await client.call_tool("discover", {"task": SIMILAR, "k": 5}))
            assert "echo" not in zero_shot[:2]
            await client.call_tool("discover", {"task": TASK, "k": 5})
            # The agent found what it needed (here: not what discover put first) and used it.
            result = await client.call_tool(
                "call", {"server": "calc", "tool": "echo", "arguments": {"text": "hi"}}
            )
            assert not result.is_error
            # A failed call in the same task is logged and earns nothing.
            failed = await client.call_tool(
                "call", {"server": "calc", "tool": "secret", "arguments": {}}
            )
            assert failed.is_error
            after = ranked(await client.call_tool("discover", {"task": SIMILAR, "k": 5}))
    assert place(after, "echo") < place(zero_shot, "echo")
    assert set(zero_shot[:2]) <= set(after)  # the zero-shot best two are still served
    assert place(after, "secret") >= place(zero_shot, "secret")  # a failure earns nothing
    log = status(config)
    assert log["tasks"] == 3
    assert log["outcomes"].get("ok") == 1 and log["calls"] == 2

    exported = CliRunner().invoke(build_app(), ["learning", "export", "--config", str(config)])
    assert exported.exit_code == 0, exported.output
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [r["task"] for r in rows] == [SIMILAR, TASK, SIMILAR]
    assert rows[0]["calls"] == [] and rows[0]["surfaced"][0] == f"calc/{zero_shot[0]}"
    assert [c["tool"] for c in rows[1]["calls"]] == ["calc/echo", "calc/secret"]
    assert rows[1]["calls"][0]["outcome"] == "ok"
    assert rows[1]["calls"][1]["outcome"] == "tool_error"


@pytest.mark.anyio
async def test_learning_off_logs_nothing_and_ranks_zero_shot(tmp_path: Path) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(toml_for(tmp_path / "state", scriptable("calc"), learning=False))
    with anyio.fail_after(120):
        async with Client(serve(config)) as client:
            first = ranked(await client.call_tool("discover", {"task": TASK}))
            await client.call_tool(
                "call", {"server": "calc", "tool": "echo", "arguments": {"text": "hi"}}
            )
            second = ranked(await client.call_tool("discover", {"task": TASK}))
    assert first == second
    assert not (tmp_path / "state" / "usage.sqlite3").exists()
