"""One slow scriptable upstream behind `serve --http`: what the shutdown and drain tests share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.types import CallToolResult

from tests.helpers.support import scriptable, toml_for


def write_config(tmp_path: Path, grace: float) -> Path:
    path = tmp_path / "cartograph.toml"
    audit = tmp_path / "audit.jsonl"
    body = toml_for(tmp_path / "state", scriptable("slow", call_timeout=60.0), audit_log=str(audit))
    path.write_text(body + f"\n[http]\nshutdown_grace = {grace}\n")
    return path


def text(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def call(client: Any, tool: str, **arguments: Any) -> CallToolResult:
    result: CallToolResult = await client.call_tool(
        "call", {"server": "slow", "tool": tool, "arguments": arguments}
    )
    return result
