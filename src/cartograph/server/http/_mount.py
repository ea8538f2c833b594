"""One MCP mount: a low-level SDK ``Server`` over a :class:`ToolSurface`.

Per-catalog endpoints and the routed mount are built here by the same code,
so the two cannot differ in how they list tools, read the principal, or turn
a refusal into a tool error.
"""

from __future__ import annotations

from typing import Any, Final

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from starlette.requests import Request

from cartograph import __version__
from cartograph.errors import CartographError
from cartograph.server.routed import ToolSurface

PRINCIPAL_SCOPE_KEY: Final = "cartograph.principal"
"""ASGI scope key where the HTTP layer records the authenticated principal's name."""


def principal_of(request: object) -> str | None:
    """The principal the HTTP layer authenticated for this request (None when auth is off)."""
    if isinstance(request, Request):
        value = request.scope.get(PRINCIPAL_SCOPE_KEY)
        return value if isinstance(value, str) else None
    return None


def error_result(exc: CartographError) -> CallToolResult:
    """A refusal as the agent sees it: a tool error with the stable code up front."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"error ({exc.code}): {exc.message}")],
        structured_content={"error": exc.to_dict()},
        is_error=True,
    )


def build_mount_server(surface: ToolSurface, *, name: str) -> Server[Any]:
    """An SDK server whose tools, calls and instructions all come from ``surface``."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=surface.list_tools())

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        principal = principal_of(ctx.request)
        try:
            return await surface.call_tool(
                params.name, dict(params.arguments or {}), principal=principal
            )
        except CartographError as exc:
            return error_result(exc)

    return Server(
        name,
        version=__version__,
        instructions=surface.instructions(),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
