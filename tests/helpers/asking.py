"""A real Python-SDK MCP server (MCPServer, stdio) whose tools ask their client for input.

``ask_model`` asks for a model sample (``sampling/createMessage``) and answers with the
sampled text; ``ask_user`` asks for the user's name (``elicitation/create``, form mode)
and answers ``ACTION: NAME``. When the client refuses, the tool answers
``refused: CODE: MESSAGE`` with the refusal's ``data.code`` (Cartograph's), so a test
sees through the proxy what the upstream was told. Run: ``python tests/helpers/asking.py``.
"""

from __future__ import annotations

import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import SamplingMessage, TextContent
from pydantic import BaseModel

server = MCPServer("asking")


class Name(BaseModel):
    name: str


def refused(exc: MCPError) -> str:
    data = exc.error.data if isinstance(exc.error.data, dict) else {}
    return f"refused: {data.get('code', exc.error.code)}: {exc.error.message}"


@server.tool(description="Ask the client's model to answer a prompt; answer with its text.")
async def ask_model(prompt: str, ctx: Context) -> str:
    message = SamplingMessage(role="user", content=TextContent(text=prompt))
    try:
        with warnings.catch_warnings():  # sampling is deprecated as of 2026-07-28
            warnings.simplefilter("ignore")
            result = await ctx.session.create_message(
                [message], max_tokens=64, related_request_id=ctx.request_id
            )
    except MCPError as exc:
        return refused(exc)
    content = result.content
    return content.text if isinstance(content, TextContent) else repr(content)


@server.tool(description="Ask the user for their name; answer ACTION: NAME.")
async def ask_user(question: str, ctx: Context) -> str:
    try:
        answer = await ctx.elicit(question, Name)
    except MCPError as exc:
        return refused(exc)
    name = answer.data.name if answer.action == "accept" and answer.data is not None else ""
    return f"{answer.action}: {name}"


if __name__ == "__main__":
    server.run()
