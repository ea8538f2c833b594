"""A real sandbox per test, and a federation for programs that call no proxy tool."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, TextContent

from cartograph.codemode import RunId, RunReport, Sandbox, SandboxTool, run_program
from cartograph.config.model import CatalogPolicy, CodeModeConfig, ServerConfig
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime.catalog import CatalogRuntime
from tests.helpers.support import config_for, scriptable
from tests.server.support import wait_until

CallHook = Callable[[str, str, dict[str, Any]], Awaitable[CallToolResult]]


class HostFunctions:
    """A federation with no tools; ``call`` runs ``hook`` (a test's own host-side action)."""

    def __init__(self, hook: CallHook | None = None) -> None:
        self.hook = hook

    def tools(self) -> Sequence[SandboxTool]:
        return ()

    def read_only(self, server: str, tool: str) -> bool | None:
        return None

    def connecting(self) -> Mapping[str, str]:
        return {}

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        if self.hook is None:
            return CallToolResult(content=[TextContent(text="no tools here")], is_error=True)
        return await self.hook(server, tool, arguments)

    async def discover(self, task: str, k: int | None) -> CallToolResult:
        return CallToolResult(content=[], structured_content={"tools": []})


@asynccontextmanager
async def sandbox(workers: int = 1) -> AsyncIterator[Sandbox]:
    pool = Sandbox(workers=workers)
    try:
        yield pool
    finally:
        await pool.aclose()


async def run(
    pool: Sandbox,
    code: str,
    *,
    inputs: dict[str, Any] | None = None,
    federation: HostFunctions | None = None,
    **settings: Any,
) -> RunReport:
    config = CodeModeConfig(enabled=True, **{"wall_time": 5.0, **settings})
    return await run_program(
        pool, federation or HostFunctions(), config, code, inputs or {}, run=RunId.new()
    )


def monty_workers() -> list[int]:
    """Process ids of this process's ``monty`` worker children (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == os.getpid() and name == "monty":
            found.append(int(entry.name))
    return found


@asynccontextmanager
async def code_mode(
    state_dir: Path, *servers: ServerConfig, policy: CatalogPolicy | None = None, **settings: Any
) -> AsyncIterator[ProxyHandlers]:
    """A catalog over real scriptable upstreams with ``[code_mode]`` on (``settings`` its keys)."""
    base = config_for(state_dir, *servers)
    config = base.model_copy(
        update={"code_mode": CodeModeConfig(enabled=True, **{"wall_time": 10.0, **settings})}
    )
    runtime = await CatalogRuntime.start(
        config, config.servers, unsafe_throwaway_key=True, share_sessions=True
    )
    handlers = ProxyHandlers(runtime, catalog="default", policy=policy)
    try:
        await wait_until(lambda: all(s.name in runtime.live for s in servers), limit=30)
        yield handlers
    finally:
        await handlers.close_upstreams()
        await runtime.aclose()


async def run_tool(
    handlers: ProxyHandlers, code: str, inputs: dict[str, Any] | None = None
) -> CallToolResult:
    arguments: dict[str, Any] = {"code": code}
    if inputs is not None:
        arguments["inputs"] = inputs
    return await handlers.call_tool("run", arguments, principal=None)


def notes(name: str = "notes") -> ServerConfig:
    return scriptable(name, "--tools", "notes")
