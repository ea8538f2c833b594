"""One MCP mount: the proxy's SDK server over a tool surface, told who is calling.

Per-catalog endpoints and the routed mount are built by the same
``build_proxy_server`` the stdio transport uses, so they cannot differ in how
they list tools, relay progress, partition upstream sessions, or turn a
refusal into a tool error. The HTTP layer only adds the principal it
authenticated, read back from the request scope.

A mount in front of stateful upstreams is a stateful server, and says so: its
``server/discover`` advertises only handshake-era versions, as a stateful SDK
server does, so a default-mode (``auto``) client falls back to the
``initialize`` handshake and gets an ``Mcp-Session-Id`` — the one per-client
identity the gateway can key upstream sessions on (P-POOL-1). A 2026-07-28
request sent anyway carries no session; the gateway gives it a stateful
upstream session for that call alone rather than one shared with anybody.
"""

from __future__ import annotations

from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
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
    if holds_client_state(surface):
        advertise_handshake_only(server)
    return server


def holds_client_state(surface: ToolSurface) -> bool:
    """Does any upstream behind ``surface`` keep per-client sessions? (Unknown: yes.)"""
    held = getattr(surface, "holds_client_state", True)
    return bool(held)


def advertise_handshake_only(server: Server[Any]) -> None:
    """Answer ``server/discover`` with handshake-era versions only (a stateful server's answer)."""

    async def discover(
        ctx: ServerRequestContext[Any, Any], _params: types.RequestParams
    ) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=server.instructions,
        )

    server.add_request_handler("server/discover", types.RequestParams, discover)
