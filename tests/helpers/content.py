"""A real Python-SDK MCP server (MCPServer, stdio) with resources, a template and a prompt.

The counterpart of server-everything (TypeScript, handshake era only): this one
speaks 2026-07-28 too, so it announces a new resource on a
``subscriptions/listen`` stream as well as with the handshake-era notification.
``mem://big`` is ``CONTENT_BIG_BYTES`` (default 4096) characters long. It completes
``greet``'s ``name`` and ``mem://echo/{text}``'s ``text`` (``completion/complete``), and
takes ``resources/subscribe``/``unsubscribe`` (handshake era): its ``touch_small`` tool
sends ``notifications/resources/updated`` for ``mem://small`` while it is subscribed.
``mem://files/{+path}`` is a naive file store, the kind of upstream a deny glob must
hold against: it percent-decodes the path (as the SDK does) and resolves ``..`` in it
(as a file system would), so ``mem://files/public%2F..%2Fsecret%2Fkey`` is the secret.
``CONTENT_START_DELAY`` seconds pass before it serves (a slow upstream).
Run: ``python tests/helpers/content.py``.
"""

from __future__ import annotations

import os
import posixpath
import time
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources import ResourceSecurity, TextResource
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

server = MCPServer("content")


@server.resource("mem://small", name="small", mime_type="text/plain")
def small() -> str:
    return "a small resource"


@server.resource("mem://big", name="big", mime_type="text/plain")
def big() -> str:
    return "x" * int(os.environ.get("CONTENT_BIG_BYTES", "4096"))


@server.resource("mem://echo/{text}", name="echo", mime_type="text/plain")
def echo(text: str) -> str:
    return f"echo: {text}"


FILES = {"public/readme": "a public file", "secret/key": "SECRET-CANARY-5d41402a"}


@server.resource(
    "mem://files/{+path}",
    name="files",
    mime_type="text/plain",
    security=ResourceSecurity(exempt_params={"path"}),  # naive on purpose: resolves ..
)
def files(path: str) -> str:
    return FILES[posixpath.normpath(path)]


@server.prompt(name="greet", description="Greet someone.")
def greet(name: str) -> str:
    return f"Hello, {name}!"


NAMES = ("Ada", "Alan", "Grace")
WORDS = ("hello", "help", "world")


@server.completion()  # type: ignore[no-untyped-call,untyped-decorator]  # the SDK leaves it untyped
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    """Names for ``greet``, words for ``mem://echo/{text}``: those starting with the value."""
    if isinstance(ref, PromptReference) and (ref.name, argument.name) == ("greet", "name"):
        pool = NAMES
    elif isinstance(ref, ResourceTemplateReference) and ref.uri == "mem://echo/{text}":
        pool = WORDS
    else:
        return None
    values = [v for v in pool if v.startswith(argument.value)]
    return Completion(values=values, total=len(values))


@server.tool(description="Add a text resource mem://added/NAME and announce the change.")
async def add_resource(name: str, ctx: Context) -> str:
    uri = f"mem://added/{name}"
    server.add_resource(TextResource(uri=uri, name=name, text=f"added {name}"))
    await ctx.notify_resources_changed()  # 2026-07-28: the listen stream
    if ctx.request_context.protocol_version != "2026-07-28":
        await ctx.request_context.session.send_resource_list_changed()
    return uri


SUBSCRIBED: set[str] = set()


async def on_subscribe(
    _ctx: ServerRequestContext[Any], params: SubscribeRequestParams
) -> EmptyResult:
    SUBSCRIBED.add(params.uri)
    return EmptyResult()


async def on_unsubscribe(
    _ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
) -> EmptyResult:
    SUBSCRIBED.discard(params.uri)
    return EmptyResult()


# MCPServer has no decorator for these (the 2026-07-28 protocol dropped them): the
# low-level server it wraps takes them as any other request handler.
server._lowlevel_server.add_request_handler(
    "resources/subscribe", SubscribeRequestParams, on_subscribe
)
server._lowlevel_server.add_request_handler(
    "resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe
)


@server.tool(description="Say mem://small changed, when subscribed; answer whether it was.")
async def touch_small(ctx: Context) -> str:
    if "mem://small" not in SUBSCRIBED:
        return "not subscribed"
    await ctx.request_context.session.send_resource_updated("mem://small")
    return "notified"


if __name__ == "__main__":
    # CONTENT_START_DELAY: seconds before serving, an upstream that is slow to start.
    time.sleep(float(os.environ.get("CONTENT_START_DELAY", "0")))
    server.run()
