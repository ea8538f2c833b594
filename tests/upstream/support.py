"""In-process upstreams for session and federation tests.

The SDK runs a low-level ``Server`` in process: ``mode="auto"`` drives it
through a direct dispatcher (the 2026-07-28 path), ``mode="legacy"`` through
in-memory streams with the 2025 initialize handshake.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext


def tool(name: str, description: str = "A tool.") -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    )


@dataclass
class FakeUpstream:
    """A scriptable in-process server: tools in pages, echo, hang, list_changed."""

    tools: list[types.Tool]
    page_size: int = 0
    repeat_cursor: bool = False
    hang_forever: anyio.Event = field(default_factory=anyio.Event)
    calls: list[str] = field(default_factory=list)

    def server(self, name: str = "fake") -> Server[Any]:
        return Server(name, on_list_tools=self._list, on_call_tool=self._call)

    async def _list(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if not self.page_size:
            return types.ListToolsResult(tools=self.tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        more = end < len(self.tools)
        cursor = ("0" if self.repeat_cursor else str(end)) if more else None
        return types.ListToolsResult(tools=self.tools[start:end], next_cursor=cursor)

    async def _call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self.calls.append(params.name)
        if params.name == "hang":
            await self.hang_forever.wait()
        if params.name == "grow":
            self.tools.append(tool(f"grown_{len(self.tools)}"))
            await ctx.session.send_tool_list_changed()
        text = str((params.arguments or {}).get("text", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def fake(names: Sequence[str], **kwargs: Any) -> FakeUpstream:
    return FakeUpstream(tools=[tool(n) for n in names], **kwargs)
