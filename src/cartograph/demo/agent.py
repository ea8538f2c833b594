"""An agent's view of the proxy: ``cartograph serve`` as a subprocess, driven by the SDK client.

This is what Claude Desktop or any MCP host does with a one-entry config:
spawn ``cartograph serve`` over stdio, list its three tools, ``discover``
tools for a task, ``call`` one, read ``status``. The demo, its integration
tests and the token benchmark all go through here, so what they report is
what an agent actually receives.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from cartograph import error_codes as codes
from cartograph.demo.loopback import DEMO_HTTP_PORT_ENV
from cartograph.errors import DemoError

REQUEST_TIMEOUT: Final = 180.0
"""Per request: the first discover waits for the whole federation to connect."""

PASSED_ENV: Final = (DEMO_HTTP_PORT_ENV, "GITHUB_PERSONAL_ACCESS_TOKEN")
"""Variables the demo config reads; an MCP host passes only what its entry names."""


def serve_parameters(config: Path, *, state_dir: Path | None = None) -> StdioServerParameters:
    """The MCP host entry for this proxy: ``cartograph serve --config F`` over stdio."""
    args = ["-m", "cartograph.cli.main", "serve", "--config", str(config)]
    if state_dir is not None:
        args += ["--state-dir", str(state_dir)]
    env = {name: os.environ[name] for name in PASSED_ENV if os.environ.get(name)}
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=config.parent)


@asynccontextmanager
async def proxy_client(
    config: Path, *, state_dir: Path | None = None, errlog: TextIO | None = None
) -> AsyncIterator[Client]:
    """A connected SDK client on a fresh ``cartograph serve`` (stopped on exit).

    ``errlog`` receives the server's stderr (its logs), so it does not mix
    with what the caller prints.
    """
    transport = stdio_client(serve_parameters(config, state_dir=state_dir), errlog or sys.stderr)
    async with Client(transport, read_timeout_seconds=REQUEST_TIMEOUT) as client:
        yield client


def wire_bytes(result: Any) -> int:
    """Size of a result as the server serialises it onto the wire (compact JSON)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def result_text(result: CallToolResult) -> str:
    return "\n".join(t for block in result.content if (t := getattr(block, "text", None)))


@dataclass(frozen=True)
class Found:
    """One discovered tool: its ids and score, and the text line the agent read for it."""

    server: str
    tool: str
    score: float
    text: str
    """``tool(signature): gist`` as in discover's text content ("" if it had no line)."""

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "tool": self.tool, "score": self.score, "text": self.text}


@dataclass(frozen=True)
class Discovery:
    task: str
    tools: list[Found]
    abstained: bool
    wire_bytes: int
    text: str = field(repr=False)

    def has(self, server: str, tool: str) -> bool:
        return any((f.server, f.tool) == (server, tool) for f in self.tools)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "abstained": self.abstained,
            "tools": [f.to_dict() for f in self.tools],
            "wire_bytes": self.wire_bytes,
        }


async def list_proxy_tools(client: Client) -> tuple[list[str], int]:
    """The proxy's tool names and the size of its ``tools/list`` reply."""
    listed = await client.list_tools()
    return [t.name for t in listed.tools], wire_bytes(listed)


async def discover(client: Client, task: str, k: int = 5) -> Discovery:
    """``discover`` as an agent receives it.

    The structured part holds ids, scores and card provenance only; what a
    tool does and takes is in the text content, one line per tool under its
    server, so each tool's line is taken from there.
    """
    result = await client.call_tool("discover", {"task": task, "k": k})
    body = _structured(result, "discover")
    text = result_text(result)
    ids = [(str(t["server"]), str(t["tool"]), float(t["score"])) for t in body["tools"]]
    lines = tool_lines(text, [(server, tool) for server, tool, _ in ids])
    tools = [
        Found(server, tool, score, lines.get((server, tool), "")) for server, tool, score in ids
    ]
    return Discovery(task, tools, bool(body.get("abstained")), wire_bytes(result), text)


def tool_lines(text: str, tools: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Each tool's line in discover's text: ``[server]`` headings, then ``- tool(...): gist``.

    Keyed by (server, tool); the value drops the leading ``- ``. A line is
    attributed to the server heading above it, so equal tool names on two
    servers stay apart.
    """
    names: dict[str, list[str]] = {}
    for server, tool in tools:
        names.setdefault(server, []).append(tool)
    found: dict[tuple[str, str], str] = {}
    current: list[str] = []
    server = ""
    for line in text.split("\n"):  # not splitlines: a gist may hold U+2028 and the like
        if line.startswith("[") and line.endswith("]") and line[1:-1] in names:
            server, current = line[1:-1], names[line[1:-1]]
            continue
        entry = line.removeprefix("- ")
        for tool in current:
            if entry != line and entry.startswith(f"{tool}("):
                found.setdefault((server, tool), entry)
    return found


async def call(
    client: Client, server: str, tool: str, arguments: Mapping[str, Any]
) -> CallToolResult:
    """``call`` through the proxy; the upstream's result comes back unchanged."""
    return await client.call_tool(
        "call", {"server": server, "tool": tool, "arguments": dict(arguments)}
    )


async def status(client: Client, *, detail: bool = False) -> dict[str, Any]:
    """``status``: totals and problems, or (``detail``) every server."""
    return _structured(await client.call_tool("status", {"detail": detail}), "status")


def _structured(result: CallToolResult, tool: str) -> dict[str, Any]:
    """A proxy tool's structured answer; a refusal becomes a typed error."""
    body = result.structured_content
    if result.is_error or not isinstance(body, dict):
        error = (body or {}).get("error", {}) if isinstance(body, dict) else {}
        message = error.get("message") or result_text(result) or json.dumps(body)
        raise DemoError(f"{tool} failed: {message}", code=error.get("code", codes.DEMO_FAILED))
    return body
