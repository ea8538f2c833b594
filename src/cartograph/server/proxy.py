"""The MCP server object: the SDK's low-level ``Server`` wired to a tool surface.

The same server serves stdio and HTTP. Anything a surface raises (or any
bug) becomes an ``isError`` result, never a dropped connection: the proxy
keeps serving (P-REL-6, P-REL-8). Upstream progress is relayed to the
downstream request that asked for it; a downstream cancellation cancels the
handler's scope, and the SDK sends the upstream a ``notifications/cancelled``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Final, TypeGuard

from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    UnsubscribeRequestParams,
)

from cartograph import __version__
from cartograph import error_codes as codes
from cartograph.echo import MAX_MESSAGE, echoed
from cartograph.errors import CallError, CartographError, PolicyError, UpstreamRefused
from cartograph.gateway.pool import SESSIONLESS_CLIENT
from cartograph.gateway.results import error_result
from cartograph.server.call_context import CALL_CONTEXT, CallContext
from cartograph.server.handlers import ContentSurface, ToolSurface
from cartograph.server.input_forwarding import Downstream
from cartograph.server.notify import ChangeNotifier, remembering
from cartograph.server.passthrough import canonical_resource_uri
from cartograph.server.tracing import install as install_request_spans
from cartograph.telemetry.spans import MAX_TRACEPARENT
from cartograph.upstream.input_requests import CALLER

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


class ProxyServer(Server[Any]):
    """The SDK server, saying that its resource and prompt lists change (they follow upstreams)."""

    notifier: ChangeNotifier | None = None

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        changes = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True
        )
        return super().create_initialization_options(changes, experimental_capabilities, extensions)


def traceparent(params: CallToolRequestParams, ctx: Ctx | None = None) -> str | None:
    """The W3C ``traceparent`` of the request (bounded): its ``_meta``'s, else its HTTP header's.

    The same precedence as the request span's parent (``server/tracing.py``), so an
    audit record names the trace its span belongs to.
    """
    meta = params.meta or {}
    value = meta.get("traceparent") if isinstance(meta, dict) else None
    if not (isinstance(value, str) and value) and ctx is not None:
        headers = getattr(ctx.request, "headers", None)
        value = headers.get("traceparent") if headers is not None else None
    return value[:MAX_TRACEPARENT] if isinstance(value, str) and value else None


def build_proxy_server(
    handlers: ToolSurface,
    *,
    client_key: KeyOf = session_header_key,
    principal_of: KeyOf | None = None,
) -> ProxyServer:
    """A low-level MCP server exposing ``handlers``' tools (discover/status/call).

    When ``handlers`` also serves upstream resources and prompts
    (:class:`ContentSurface`), those are registered too, and their changes are
    forwarded to the connected clients (``server.notifier``).
    """

    def context(ctx: Ctx, progress: Any = None) -> CallContext:
        principal = principal_of(ctx) if principal_of is not None else None
        return CallContext(client=client_key(ctx), progress=progress, principal=principal)

    async def on_list_tools(ctx: Ctx, _params: PaginatedRequestParams | None) -> ListToolsResult:
        # The routed mount lists only what this principal reaches (P-AUTH-5).
        token = CALL_CONTEXT.set(context(ctx))
        try:
            return ListToolsResult(tools=handlers.list_tools())
        finally:
            CALL_CONTEXT.reset(token)

    async def on_call_tool(ctx: Ctx, params: CallToolRequestParams) -> CallToolResult:
        async def progress(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        call = replace(context(ctx, progress), trace=traceparent(params, ctx))
        token = CALL_CONTEXT.set(call)
        # An upstream's sampling/elicitation request during this call comes back here alone.
        asking = CALLER.set(_downstream(ctx, call))
        try:
            return await handlers.call_tool(
                params.name, dict(params.arguments or {}), principal=call.principal
            )
        except CartographError as exc:
            return error_result(exc)
        except Exception as exc:  # the proxy must outlive any bug in one call
            logger.exception("proxy tool %s failed", echoed(params.name))
            return error_result(
                CartographError(f"internal error: {type(exc).__name__}", code=codes.INTERNAL_ERROR)
            )
        finally:
            CALLER.reset(asking)
            CALL_CONTEXT.reset(token)

    server = ProxyServer(
        SERVER_NAME,
        version=__version__,
        instructions=handlers.instructions(),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    install_request_spans(server.middleware)
    if _serves_content(handlers):
        _add_content(server, handlers, context)
        notifier = ChangeNotifier()
        server.notifier = notifier
        server.add_request_handler(
            "subscriptions/listen", SubscriptionsListenRequestParams, notifier.listen
        )
        server.middleware.append(remembering(notifier, _sessioned(client_key)))
        handlers.subscribe_changes(notifier)
        _add_subscriptions(server, handlers, context, notifier, _sessioned(client_key))
        handlers.subscribe_updates(notifier.resource_updated)
    return server


def _serves_content(handlers: ToolSurface) -> TypeGuard[ContentSurface]:
    return callable(getattr(handlers, "subscribe_changes", None))


def _sessioned(client_key: KeyOf) -> KeyOf:
    """The client key of a connection that can receive notifications (not a sessionless POST)."""

    def key(ctx: Ctx) -> str | None:
        found = client_key(ctx)
        return None if found == SESSIONLESS_HTTP_CLIENT else found

    return key


def _add_content(
    server: Server[Any], surface: ContentSurface, context: Callable[[Ctx], CallContext]
) -> None:
    """``resources/*`` and ``prompts/*`` handlers over ``surface``; refusals are JSON-RPC errors."""

    async def on_list_resources(ctx: Ctx, _p: PaginatedRequestParams | None) -> ListResourcesResult:
        with _called(context(ctx)):
            await surface.content_settled()
            return ListResourcesResult(resources=surface.list_resources())

    async def on_list_templates(
        ctx: Ctx, _p: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        with _called(context(ctx)):
            await surface.content_settled()
            return ListResourceTemplatesResult(resource_templates=surface.list_resource_templates())

    async def on_read_resource(ctx: Ctx, params: ReadResourceRequestParams) -> ReadResourceResult:
        call = context(ctx)
        with _called(call, ctx), _as_rpc_error("resources/read"):
            return await surface.read_resource(params.uri, principal=call.principal)

    async def on_list_prompts(ctx: Ctx, _p: PaginatedRequestParams | None) -> ListPromptsResult:
        with _called(context(ctx)):
            await surface.content_settled()
            return ListPromptsResult(prompts=surface.list_prompts())

    async def on_get_prompt(ctx: Ctx, params: GetPromptRequestParams) -> GetPromptResult:
        call = context(ctx)
        with _called(call, ctx), _as_rpc_error("prompts/get"):
            return await surface.get_prompt(params.name, params.arguments, principal=call.principal)

    server.add_request_handler("resources/list", PaginatedRequestParams, on_list_resources)
    server.add_request_handler(
        "resources/templates/list", PaginatedRequestParams, on_list_templates
    )
    server.add_request_handler("resources/read", ReadResourceRequestParams, on_read_resource)

    async def on_complete(ctx: Ctx, params: CompleteRequestParams) -> CompleteResult:
        call = context(ctx)
        context_arguments = params.context.arguments if params.context is not None else None
        with _called(call, ctx), _as_rpc_error("completion/complete"):
            return await surface.complete(
                params.ref, params.argument, context_arguments, principal=call.principal
            )

    server.add_request_handler("prompts/list", PaginatedRequestParams, on_list_prompts)
    server.add_request_handler("prompts/get", GetPromptRequestParams, on_get_prompt)
    server.add_request_handler("completion/complete", CompleteRequestParams, on_complete)


def _add_subscriptions(
    server: Server[Any],
    surface: ContentSurface,
    context: Callable[[Ctx], CallContext],
    notifier: ChangeNotifier,
    client_of: KeyOf,
) -> None:
    """``resources/subscribe``/``unsubscribe`` (handshake era): forwarded, then remembered.

    The notifier tells the subscribing connection of each update; a sessionless
    request has no connection to tell, so it is forwarded and audited only.
    """

    async def on_subscribe(ctx: Ctx, params: SubscribeRequestParams) -> EmptyResult:
        call = context(ctx)
        with _called(call, ctx), _as_rpc_error("resources/subscribe"):
            await surface.subscribe_resource(params.uri, principal=call.principal)
        client = client_of(ctx)
        if client is not None:  # the spelling the update will come back under (P-URI-1)
            notifier.subscribed(client, canonical_resource_uri(params.uri))
        return EmptyResult()

    async def on_unsubscribe(ctx: Ctx, params: UnsubscribeRequestParams) -> EmptyResult:
        call = context(ctx)
        client = client_of(ctx)
        if client is not None:
            notifier.unsubscribed(client, canonical_resource_uri(params.uri))
        with _called(call, ctx), _as_rpc_error("resources/unsubscribe"):
            await surface.unsubscribe_resource(params.uri, principal=call.principal)
        return EmptyResult()

    server.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
    server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe)


def _downstream(ctx: Ctx, call: CallContext) -> Downstream:
    """Where an upstream's request for input during this request goes back to.

    A sessionless HTTP request has no client of its own (every such request
    shares one key), so nothing it causes can be attributed to it.
    """
    client = None if call.client == SESSIONLESS_HTTP_CLIENT else call.client
    return Downstream(ctx.session, ctx.request_id, client, call.principal, call.trace)


@contextmanager
def _called(call: CallContext, ctx: Ctx | None = None) -> Iterator[None]:
    """``call`` as the request's context; with ``ctx``, its connection as the one an
    upstream's request for input during it goes back to (``input_forwarding.py``)."""
    token = CALL_CONTEXT.set(call)
    asking = CALLER.set(_downstream(ctx, call) if ctx is not None else None)
    try:
        yield
    finally:
        CALLER.reset(asking)
        CALL_CONTEXT.reset(token)


@contextmanager
def _as_rpc_error(method: str) -> Iterator[None]:
    """A refusal or upstream failure as the JSON-RPC error the client expects.

    ``data.code`` carries Cartograph's stable code; an upstream's own "no"
    keeps the upstream's JSON-RPC code (e.g. -32602, unknown resource). The
    message is kept to :data:`~cartograph.echo.MAX_MESSAGE` characters.
    """
    try:
        yield
    except UpstreamRefused as exc:
        raise MCPError(
            exc.details.get("rpc_code", INVALID_PARAMS), _message(exc), _data(exc)
        ) from None
    except (CallError, PolicyError) as exc:
        raise MCPError(INVALID_PARAMS, _message(exc), _data(exc)) from None
    except CartographError as exc:
        raise MCPError(INTERNAL_ERROR, _message(exc), _data(exc)) from None
    except MCPError:
        raise
    except Exception as exc:  # the proxy must outlive any bug in one request
        logger.exception("%s failed", method)
        raise MCPError(
            INTERNAL_ERROR, f"internal error: {type(exc).__name__}", {"code": codes.INTERNAL_ERROR}
        ) from None


def _message(exc: CartographError) -> str:
    return echoed(exc.message, MAX_MESSAGE)


def _data(exc: CartographError) -> dict[str, Any]:
    return {"code": exc.code}
