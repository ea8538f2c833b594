"""Test support: a real uvicorn server in a thread, a recording ProxyHandlers double.

``RecordingSurface`` is a double of OUR OWN handler interface (the shape of
``cartograph.server.handlers.ProxyHandlers``): it authorizes once and audits
once per call, as the contract says, and records both so tests can count them.
Upstream MCP servers used by tests are real servers over real sockets.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, TextContent, Tool
from starlette.types import ASGIApp

from cartograph.errors import CartographError, UnknownToolError
from cartograph.gateway.results import error_result

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "discover": {
        "type": "object",
        "properties": {"task": {"type": "string"}, "k": {"type": "integer"}},
        "required": ["task"],
    },
    "status": {"type": "object", "properties": {}},
    "call": {
        "type": "object",
        "properties": {
            "server": {"type": "string"},
            "tool": {"type": "string"},
            "arguments": {"type": "object"},
        },
        "required": ["server", "tool"],
    },
}
DESCRIPTIONS = {
    "discover": "Find the tools that fit a task.",
    "status": "Health of this catalog's servers.",
    "call": "Run a tool that discover returned.",
}


@dataclass
class Ledger:
    """Every authorization decision and audit record the doubles made."""

    decisions: list[tuple[str | None, str, str]] = field(default_factory=list)
    audits: list[dict[str, Any]] = field(default_factory=list)


Authorize = Callable[[str | None, str, str], None]


class RecordingSurface:
    """One catalog's handlers: prefixed names, policy filter, one authorize + one audit per call."""

    def __init__(
        self,
        catalog: str,
        ledger: Ledger,
        *,
        prefix: str | None = None,
        proxy_tools: Sequence[str] = ("discover", "status", "call"),
        authorize: Authorize | None = None,
    ) -> None:
        self.catalog = catalog
        self.ledger = ledger
        self.prefix = prefix or ""
        self.proxy_tools = tuple(proxy_tools)
        self.authorize = authorize
        self.calls = 0

    def list_tools(self) -> list[Tool]:
        return [
            Tool(name=self.prefix + n, description=DESCRIPTIONS[n], input_schema=TOOL_SCHEMAS[n])
            for n in self.proxy_tools
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, principal: str | None
    ) -> CallToolResult:
        """As ProxyHandlers: refusals become error results; exactly one audit record."""
        self.calls += 1
        bare = name.removeprefix(self.prefix)
        outcome = "ok"
        try:
            if not name.startswith(self.prefix) or bare not in self.proxy_tools:
                raise UnknownToolError(f"no tool {name!r}", code="unknown_proxy_tool")
            self.ledger.decisions.append((principal, self.catalog, bare))
            if self.authorize is not None:
                self.authorize(principal, self.catalog, bare)
            body = {"catalog": self.catalog, "tool": bare, "arguments": arguments}
            return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))])
        except CartographError as exc:
            outcome = exc.code
            return error_result(exc)
        finally:
            self.ledger.audits.append(
                {"catalog": self.catalog, "principal": principal, "tool": bare, "outcome": outcome}
            )

    def instructions(self) -> str:
        names = ", ".join(self.prefix + n for n in self.proxy_tools)
        return f"Catalog {self.catalog}: tools {names}."


def free_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)  # connections queue in the backlog until uvicorn accepts: no wait needed
    return sock


@contextlib.contextmanager
def serving(app: ASGIApp, port: int = 0) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a loopback port (default: free) in a thread; yields its URL."""
    sock = free_socket(port=port)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop within 15 s"


@contextlib.asynccontextmanager
async def mcp_client(
    url: str,
    *,
    token: str | None = None,
    mode: str = "auto",
    headers: dict[str, str] | None = None,
    read_timeout: float = 20,
) -> AsyncIterator[Client]:
    """The SDK's real streamable-HTTP client, optionally with a bearer token."""
    all_headers = dict(headers or {})
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    async with create_mcp_http_client(headers=all_headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=read_timeout) as client:
            yield client


def http_client(base: str, token: str | None = None) -> httpx2.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.Client(base_url=base, headers=headers, timeout=10)


INIT_BODY: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def tool_text(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def error_code(result: CallToolResult) -> str:
    assert result.is_error, tool_text(result)
    assert result.structured_content is not None
    return str(result.structured_content["error"]["code"])


@dataclass
class Assembly:
    """An app over RecordingSurfaces, built the way ``serve --http`` builds it."""

    app: Any
    ledger: Ledger
    per_catalog: dict[str, RecordingSurface]
    routed_targets: dict[str, RecordingSurface]
    audit: Any = None
    """The AuditLog of refusals made before any surface ran (HTTP layer, routed mount)."""


def assemble(
    names: Sequence[str],
    *,
    routed: bool = False,
    authority: Any = None,
    proxy_tools: dict[str, Sequence[str]] | None = None,
    settings: Any = None,
    audit: Any = None,
) -> Assembly:
    from cartograph.config.catalogs import derived_prefix
    from cartograph.gateway.audit import AuditLog
    from cartograph.server.auth import TokenAuthority
    from cartograph.server.http import CatalogMount, build_http_app
    from cartograph.server.routed import RoutedHandlers

    authority = authority or TokenAuthority()
    ledger = Ledger()
    tools = proxy_tools or {}
    many = len(names) > 1

    def surface(name: str, prefix: str | None) -> RecordingSurface:
        default = ("discover", "status", "call")
        return RecordingSurface(
            name,
            ledger,
            prefix=prefix,
            proxy_tools=tools.get(name, default),
            authorize=authority.authorize,
        )

    per = {n: surface(n, derived_prefix(n) if many else None) for n in names}
    targets = {n: surface(n, None) for n in names} if routed else {}
    audit = audit if audit is not None else AuditLog()
    app = build_http_app(
        [CatalogMount(n, s) for n, s in per.items()],
        authority=authority,
        routed=RoutedHandlers(targets, authority=authority, audit=audit) if routed else None,
        settings=settings,
        audit=audit,
    )
    return Assembly(app, ledger, per, targets, audit)


MODERN = "2026-07-28"


def modern_call(tool: str, arguments: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """Headers and body of a self-contained 2026-07-28 ``tools/call`` POST (no session)."""
    headers = {
        **MCP_HEADERS,
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    }
    return headers, body


def modern_request(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``httpx2`` keyword arguments for one self-contained 2026-07-28 request."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }
    return {"json": body, "headers": headers}
