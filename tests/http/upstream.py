"""A real upstream MCP server over streamable HTTP that records every request's headers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import Receive, Scope, Send

UPSTREAM_TOOLS = [
    Tool(
        name="echo",
        description="Echo the message back unchanged.",
        input_schema={
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    ),
    Tool(
        name="add",
        description="Add two integers and return the sum.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    ),
]


class HeaderLog:
    """Every header list the upstream received, lower-cased names."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []

    def names(self) -> set[str]:
        return {name for request in self.requests for name in request}

    def values(self) -> list[str]:
        return [value for request in self.requests for value in request.values()]


def upstream_app(log: HeaderLog) -> Starlette:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=UPSTREAM_TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        args = params.arguments or {}
        text = str(int(args["a"]) + int(args["b"])) if params.name == "add" else json.dumps(args)
        return CallToolResult(content=[TextContent(type="text", text=text)])

    server = Server("echo-upstream", on_list_tools=list_tools, on_call_tool=call_tool)
    manager = StreamableHTTPSessionManager(server)

    async def record(scope: Scope, receive: Receive, send: Send) -> None:
        log.requests.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Mount("/mcp", app=record)], lifespan=lifespan)
