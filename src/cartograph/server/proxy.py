"""The MCP server object: the SDK's low-level ``Server`` wired to a tool surface.

The same server serves stdio and HTTP. Anything a surface raises (or any
bug) becomes an ``isError`` result, never a dropped connection: the proxy
keeps serving (P-REL-6, P-REL-8). Upstream progress is relayed to the
downstream request that asked for it; a downstream cancellation cancels the
handler's scope, and the SDK sends the upstream a ``notifications/cancelled``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams

from cartograph import __version__
from cartograph.errors import CartographError
from cartograph.gateway.pool import SESSIONLESS_CLIENT
from cartograph.gateway.results import error_result
from cartograph.server.handlers import CALL_CONTEXT, CallContext, ToolSurface

logger = logging.getLogger(__name__)

SERVER_NAME: Final = "cartograph"
LOCAL_CLIENT: Final = "local"
SESSIONLESS_HTTP_CLIENT: Final = SESSIONLESS_CLIENT
"""2026-07-28 HTTP requests carry no session and the SDK exposes no per-connection
identity: the gateway gives each such call a stateful upstream session of its own
(see docs/gateway.md, Pooling)."""

Ctx = ServerRequestContext[Any, Any]
KeyOf = Callable[[Ctx], str | None]


def http_client_key(session_id: str) -> str:
    """The client key of one HTTP MCP session; released when that session ends."""
    return f"http:{session_id}"


def session_header_key(ctx: Ctx) -> str | None:
    """The downstream client's identity: its HTTP session id, else one local client (stdio)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is not None:
        session_id = headers.get("mcp-session-id")
        return http_client_key(session_id) if session_id else SESSIONLESS_HTTP_CLIENT
    return LOCAL_CLIENT


def build_proxy_server(
    handlers: ToolSurface,
    *,
    client_key: KeyOf = session_header_key,
    principal_of: KeyOf | None = None,
) -> Server[Any]:
    """A low-level MCP server exposing ``handlers``' tools (discover/status/call)."""

    async def on_list_tools(ctx: Ctx, _params: PaginatedRequestParams | None) -> ListToolsResult:
        # The routed mount lists only what this principal reaches (P-AUTH-5).
        principal = principal_of(ctx) if principal_of is not None else None
        token = CALL_CONTEXT.set(CallContext(client=client_key(ctx), principal=principal))
        try:
            return ListToolsResult(tools=handlers.list_tools())
        finally:
            CALL_CONTEXT.reset(token)

    async def on_call_tool(ctx: Ctx, params: CallToolRequestParams) -> CallToolResult:
        principal = principal_of(ctx) if principal_of is not None else None

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        token = CALL_CONTEXT.set(
            CallContext(client=client_key(ctx), progress=progress, principal=principal)
        )
        try:
            return await handlers.call_tool(
                params.name, dict(params.arguments or {}), principal=principal
            )
        except CartographError as exc:
            return error_result(exc)
        except Exception as exc:  # the proxy must outlive any bug in one call
            logger.exception("proxy tool %s failed", params.name)
            return error_result(
                CartographError(f"internal error: {type(exc).__name__}", code="internal_error")
            )
        finally:
            CALL_CONTEXT.reset(token)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=handlers.instructions(),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
