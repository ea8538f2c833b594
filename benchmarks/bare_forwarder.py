"""The floor under ``call``: an MCP proxy with no checks at all, on the same SDK.

A low-level SDK ``Server`` whose ``tools/call`` hands the request to one
kept-open SDK ``Client`` session to the upstream and returns what comes back.
No validation, policy, audit, limits, secret scan, spans or metrics: what is
left is the SDK's two hops (a server side reading and writing JSON-RPC, a
client side doing the same to the upstream). ``gateway_latency.py`` runs it
beside ``cartograph serve`` so the table says how much of the proxy's overhead
is the SDK's own and how much is ours.

    python benchmarks/bare_forwarder.py [--wire sdk|loop] [--http] -- COMMAND ARGS...

``--wire loop`` serves stdio from the event loop as ``cartograph serve`` does
(``server/stdio/wire.py``); ``sdk`` uses the SDK's ``stdio_server`` (a worker
thread per line read and per reply written). ``--http`` serves streamable
HTTP on 127.0.0.1 (a free port, announced on stderr as ``bare serving on URL``).
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

Ctx = ServerRequestContext[Any, Any]


def forwarder(upstream: Client) -> Server[Any]:
    """A server listing the upstream's tools and forwarding each call, untouched."""

    async def on_list_tools(_ctx: Ctx, _params: Any) -> ListToolsResult:
        return await upstream.list_tools()

    async def on_call_tool(_ctx: Ctx, params: CallToolRequestParams) -> CallToolResult:
        return await upstream.call_tool(params.name, params.arguments or {})

    return Server("bare-forwarder", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def serve_stdio(server: Server[Any], wire: str) -> None:
    options = server.create_initialization_options()
    if wire == "loop":
        from cartograph.server.stdio.wire import fast_stdio

        async with fast_stdio() as pipes:
            if pipes is not None:
                stdin, stdout = pipes
                async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
                    await server.run(read, write, options)
                return
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


async def serve_http(server: Server[Any]) -> None:
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    manager = StreamableHTTPSessionManager(server)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    app = Starlette(routes=[Mount("/mcp", app=manager.handle_request)], lifespan=lifespan)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)  # connections wait in the backlog until uvicorn accepts them
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"bare serving on http://127.0.0.1:{port}/mcp/", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[listener])


async def main(wire: str, http: bool, command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode="legacy") as upstream:
        server = forwarder(upstream)
        if http:
            await serve_http(server)
        else:
            await serve_stdio(server, wire)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--wire", choices=("sdk", "loop"), default="loop")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    anyio.run(main, options.wire, options.http, command)
