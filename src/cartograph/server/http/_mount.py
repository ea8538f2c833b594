"""One MCP mount: the proxy's SDK server over a tool surface, told who is calling.

Per-catalog endpoints and the routed mount are built by the same
``build_proxy_server`` the stdio transport uses, so they cannot differ in how
they list tools, relay progress, partition upstream sessions, or turn a
refusal into a tool error. The HTTP layer only adds the principal it
authenticated, read back from the request scope.
"""

from __future__ import annotations

from typing import Any, Final

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from starlette.requests import Request

from cartograph.server.handlers import ToolSurface
from cartograph.server.proxy import build_proxy_server

PRINCIPAL_SCOPE_KEY: Final = "cartograph.principal"
"""ASGI scope key where the HTTP layer records the authenticated principal's name."""


def principal_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The principal the HTTP layer authenticated for this request (None when auth is off)."""
    request = ctx.request
    if isinstance(request, Request):
        value = request.scope.get(PRINCIPAL_SCOPE_KEY)
        return value if isinstance(value, str) else None
    return None


def build_mount_server(surface: ToolSurface, *, label: str) -> Server[Any]:
    """The SDK server for one mount; ``label`` names it ``cartograph:<label>`` to clients."""
    server = build_proxy_server(surface, principal_of=principal_of)
    server.name = f"cartograph:{label}"  # tells apart the entries of a multi-catalog client
    return server
