"""``cartograph bridge``: a stdio MCP server forwarding everything to a streamable HTTP endpoint.

Claude Desktop's config file (and the Inspector's, for headers) can only
start stdio commands; a Cartograph served over HTTP is reached through this
bridge, in Python, so no Node (``mcp-remote``) is needed. It works at the
transport level on the official SDK's two transports: every JSON-RPC message
read from stdin — request, response, notification — is sent to the HTTP
endpoint, and every message the endpoint sends (responses, server requests,
notifications such as ``tools/list_changed``) is written to stdout. Sessions,
protocol versions and capabilities are negotiated end to end by the client
and the server; the bridge adds only the ``Authorization`` header.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client

logger = logging.getLogger(__name__)


async def run_bridge(url: str, headers: Mapping[str, str] | None = None) -> None:
    """Forward this process's stdio to ``url`` until stdin closes."""
    async with (
        create_mcp_http_client(headers=dict(headers or {})) as http,
        streamable_http_client(url, http_client=http) as (http_read, http_write),
        stdio_server() as (stdio_read, stdio_write),
        anyio.create_task_group() as group,
    ):

        async def client_to_server() -> None:
            await _pump(stdio_read, http_write, "stdin")
            group.cancel_scope.cancel()  # the client went away: end the session

        group.start_soon(client_to_server)
        group.start_soon(_pump, http_read, stdio_write, url)


async def _pump(source: Any, sink: Any, name: str) -> None:
    """Copy messages; a message one side could not parse is logged, not forwarded."""
    async with sink:
        async for item in source:
            if isinstance(item, Exception):
                logger.warning("bridge: unreadable message from %s: %s", name, item)
                continue
            await sink.send(item)
