"""A real MCP server (SDK low-level ``Server`` over stdio) for stub end-to-end tests.

Its tools have the shapes stubs must handle on the wire: a hyphenated name
with an output schema (structured result), a keyword-named argument with an
enum default, a tool that reports ``isError``, and one that echoes exactly the
arguments it received (to prove defaults are omitted and keys keep their
upstream spelling). Run: ``python tests/stubs/upstream.py``.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

PUBLISHER_CANARY = "publisher-prose-canary-5d0e"


def _tools() -> list[types.Tool]:
    return [
        types.Tool(
            name="add-numbers",
            description=f"Adds two integers. {PUBLISHER_CANARY}",
            input_schema={
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "description": f"first {PUBLISHER_CANARY}"},
                    "b": {"type": "integer", "title": PUBLISHER_CANARY},
                },
                "required": ["a", "b"],
            },
            output_schema={
                "type": "object",
                "properties": {"sum": {"type": "integer"}},
                "required": ["sum"],
            },
        ),
        types.Tool(
            name="greet",
            description="Greets someone by name.",
            input_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "from": {"type": "string"},
                    "style": {"type": "string", "enum": ["plain", "shout"], "default": "plain"},
                },
                "required": ["name"],
            },
        ),
        types.Tool(
            name="echo-args",
            description="Returns the arguments it received as JSON.",
            input_schema={
                "type": "object",
                "properties": {
                    "first-key": {"type": "string"},
                    "limit": {"type": "integer", "default": 10},
                },
            },
        ),
        types.Tool(
            name="fail",
            description="Always reports a tool error.",
            input_schema={"type": "object", "properties": {}},
        ),
    ]


def _text(text: str, **kwargs: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], **kwargs)


async def on_list_tools(_ctx: ServerRequestContext[Any], _params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_tools())


async def on_call_tool(
    _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "add-numbers":
        total = int(args["a"]) + int(args["b"])
        return _text(str(total), structured_content={"sum": total})
    if params.name == "greet":
        greeting = f"hello {args['name']}" + (f" from {args['from']}" if "from" in args else "")
        return _text(greeting.upper() if args.get("style") == "shout" else greeting)
    if params.name == "echo-args":
        return _text(json.dumps(args, sort_keys=True))
    if params.name == "fail":
        return _text("deliberate failure", is_error=True)
    return _text(f"unknown tool {params.name}", is_error=True)


async def main() -> None:
    server = Server(
        "stub-upstream", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
