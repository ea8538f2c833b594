"""UpstreamSession over the SSE transport, against the SDK's own SSE server on 127.0.0.1.

The integration suite also drives server-everything's SSE mode; this test needs
no demo install, so the SSE path is exercised on every run.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.server import Server
from mcp.server.sse import SseServerTransport
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import Receive, Scope, Send

from cartograph.config.model import ServerConfig
from cartograph.upstream.session import UpstreamSession
from tests.http.support import serving
from tests.upstream.support import fake

pytestmark = pytest.mark.anyio


class _SseEndpoint:
    """GET /sse as a raw ASGI app (Starlette hands plain functions a Request instead)."""

    def __init__(self, server: Server[Any], transport: SseServerTransport) -> None:
        self.server = server
        self.transport = transport

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with self.transport.connect_sse(scope, receive, send) as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())


def sse_app(server: Server[Any]) -> Starlette:
    """The SDK's documented SSE wiring: GET /sse opens the stream, POST /messages/ feeds it."""
    transport = SseServerTransport("/messages/")
    return Starlette(
        routes=[
            Route("/sse", endpoint=_SseEndpoint(server, transport), methods=["GET"]),
            Mount("/messages/", app=transport.handle_post_message),
        ]
    )


@pytest.mark.parametrize(("protocol", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_an_sse_upstream_on_loopback_lists_and_calls_tools_in_either_era(
    protocol: str, era: str
) -> None:
    upstream = fake(["echo", "other"])
    with serving(sse_app(upstream.server("sse-fake"))) as base:
        cfg = ServerConfig.model_validate(
            {"name": "sse-fake", "url": f"{base}/sse", "transport": "sse", "protocol": protocol}
        )
        with anyio.fail_after(30):
            session = await UpstreamSession.open(cfg)
            try:
                listed = await session.list_tools()
                result = await session.call_tool("echo", {"text": "over-sse"}, timeout=10)
            finally:
                await session.aclose()
    assert [t.name for t in listed.tools] == ["echo", "other"]
    assert listed.transport == "sse"
    assert result.content[0].text == "over-sse"  # type: ignore[union-attr]
    assert session.protocol_version == era
    assert upstream.calls == ["echo"]
