"""``cartograph serve`` on stdio with ``[code_mode]`` on, driven by the SDK's stdio client."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cartograph import error_codes as codes
from tests.codemode.support import notes
from tests.helpers.support import toml_for

SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")


def params(tmp_path: Path) -> StdioServerParameters:
    config = tmp_path / "cartograph.toml"
    toml = toml_for(tmp_path / "state", notes())
    config.write_text(toml + "\n[code_mode]\nenabled = true\nwall_time = 5.0\n")
    return StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(config)],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-3")
async def test_serve_lists_run_runs_a_program_and_survives_a_hostile_one(tmp_path: Path) -> None:
    program = "len((await notes.read_note(name='alpha')).split())"
    with anyio.fail_after(90):
        async with Client(params(tmp_path)) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            counted = await client.call_tool("run", {"code": program})
            looped = await client.call_tool("run", {"code": "while True:\n    pass"})
            after = await client.call_tool(
                "call", {"server": "notes", "tool": "list_notes", "arguments": {}}
            )
    assert tools == ["discover", "status", "call", "run"]
    assert counted.structured_content is not None
    assert counted.structured_content["value"] == 3
    assert looped.is_error and looped.structured_content is not None
    assert looped.structured_content["error"]["code"] == codes.CODE_TIMEOUT
    assert not after.is_error
