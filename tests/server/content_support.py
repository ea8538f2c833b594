"""The content upstream (resources, prompts, subscriptions) behind the proxy: its configs,
the proxy served over it, and the subscription helpers the passthrough tests share.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    EmptyResult,
    ResourceUpdatedNotification,
    SubscribeRequest,
    SubscribeRequestParams,
    UnsubscribeRequest,
    UnsubscribeRequestParams,
)

from cartograph.config.model import ServerConfig
from tests.helpers.support import toml_for
from tests.server.stdio_serving import SERVE


def content_config(tmp_path: Path, *, catalogs: str) -> Path:
    audit = str(tmp_path / "audit.jsonl")
    path = tmp_path / "cartograph.toml"
    path.write_text(toml_for(tmp_path / "state", content_server(), audit_log=audit) + catalogs)
    return path


@asynccontextmanager
async def http_client(url: str, mode: str, handler: Any) -> AsyncIterator[Client]:
    """The SDK's streamable-HTTP client, with a handler for server notifications."""
    async with create_mcp_http_client() as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport, mode=mode, message_handler=handler, read_timeout_seconds=30
        ) as client:
            yield client


CONTENT = Path(__file__).resolve().parents[1] / "helpers" / "content.py"

SMALL = "cartograph://main/content/mem://small"


class Updates:
    """``notifications/resources/updated`` as the client receives them."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.arrived = anyio.Event()

    async def handler(self, message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.uris.append(message.params.uri)
            self.arrived.set()

    async def next(self) -> str:
        with anyio.fail_after(30):
            await self.arrived.wait()
        self.arrived = anyio.Event()
        return self.uris[-1]


async def subscribe(client: Client, uri: str) -> None:
    """A plain request: the SDK's helper warns the method is gone from 2026-07-28."""
    request = SubscribeRequest(params=SubscribeRequestParams(uri=uri))
    with anyio.fail_after(60):
        while True:  # the upstream connects behind the served index
            try:
                await client.session.send_request(request, EmptyResult)
                return
            except MCPError as exc:
                if (exc.error.data or {}).get("code") not in {"unknown_server", "starting"}:
                    raise
                await anyio.sleep(0.05)


async def unsubscribe(client: Client, uri: str) -> None:
    request = UnsubscribeRequest(params=UnsubscribeRequestParams(uri=uri))
    await client.session.send_request(request, EmptyResult)


async def touch(client: Client, tool: str = "call", **routing: str) -> str:
    arguments = {"server": "content", "tool": "touch_small", "arguments": {}, **routing}
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    return "".join(getattr(b, "text", "") for b in result.content)


def audited(tmp_path: Path, *methods: str) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text("utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["proxy_tool"] in methods]


FILES = "cartograph://main/content/mem://files/"


@asynccontextmanager
async def served(tmp_path: Path, updates: Updates | None = None) -> AsyncIterator[Client]:
    """The real proxy over stdio, its upstream connected (a public read answers)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(files_config(tmp_path))],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )
    handler = updates.handler if updates is not None else None
    with anyio.fail_after(120):
        async with Client(params, mode="legacy", message_handler=handler) as client:
            await connected(client)
            yield client


FILES_CATALOG = """
[[catalogs]]
name = "main"
policy.deny = ["content/mem://files/secret/*", "content/greet"]
"""


def files_config(tmp_path: Path) -> Path:
    content = ServerConfig(
        name="content",
        command=sys.executable,
        args=(str(CONTENT),),
        protocol="legacy",  # resources/subscribe is handshake-era only
        connect_timeout=30.0,
    )
    path = tmp_path / "cartograph.toml"
    audit = str(tmp_path / "audit.jsonl")
    path.write_text(toml_for(tmp_path / "state", content, audit_log=audit) + FILES_CATALOG)
    return path


async def connected(client: Client) -> None:
    """The upstream connects behind the served index: read a public file until it answers."""
    while True:
        try:
            await client.read_resource(f"{FILES}public/readme", cache_mode="bypass")
            return
        except MCPError as exc:
            if (exc.error.data or {}).get("code") not in {"unknown_server", "starting"}:
                raise
            await anyio.sleep(0.05)


def content_server() -> ServerConfig:
    return ServerConfig(
        name="content", command=sys.executable, args=(str(CONTENT),), connect_timeout=30.0
    )
