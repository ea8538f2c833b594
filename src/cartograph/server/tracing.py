"""One span per MCP request, server side, on stdio and HTTP alike.

The MCP SDK ships its own tracing middleware on every ``Server``; Cartograph
replaces it with :class:`RequestSpans` so the request span is the one its
children (``discover``, the upstream call) hang off, carries Cartograph's
attributes (catalog, proxy tool, upstream server and tool, outcome and error
code — never argument values), and takes its parent from the request's
``_meta`` (SEP-414) or else from the agent's HTTP ``traceparent`` header.
The same middleware opens the request's log fields (``--log-format json``).
With tracing off the span is the OpenTelemetry API's no-op.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server._otel import OpenTelemetryMiddleware  # the SDK's default, replaced below
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.types import CallToolResult
from opentelemetry.trace import SpanKind

from cartograph.echo import echoed
from cartograph.gateway.results import error_code
from cartograph.telemetry import finish, parent_from, request_fields, span
from cartograph.telemetry.spans import OUTCOME_OK, TOOL_ERROR

Ctx = ServerRequestContext[Any, Any]


class RequestSpans(ServerMiddleware[Any]):
    """Wraps each inbound request in a SERVER span and a log-fields scope."""

    async def __call__(self, ctx: Ctx, call_next: CallNext) -> HandlerResult:
        target = _target(ctx)
        attributes: dict[str, str | None] = {
            "mcp.method.name": ctx.method,
            "jsonrpc.request.id": None if ctx.request_id is None else str(ctx.request_id),
            "gen_ai.tool.name": target if ctx.method == "tools/call" else None,
        }
        parent = parent_from(_mapping(ctx.meta), _headers(ctx))
        name = f"{ctx.method} {target}" if target else ctx.method
        with (
            request_fields(request_id=attributes["jsonrpc.request.id"], method=ctx.method),
            span(name, attributes, kind=SpanKind.SERVER, parent=parent) as current,
        ):
            result = await call_next(ctx)
            finish(current, outcome(result))
            return result


def outcome(result: Any) -> str:
    """``ok``, a tool error's stable code, or ``tool_error`` for an upstream's own failure."""
    if isinstance(result, CallToolResult):
        if not result.is_error:
            return OUTCOME_OK
        return error_code(result) or TOOL_ERROR
    if isinstance(result, Mapping) and result.get("isError") is True:
        return TOOL_ERROR
    return OUTCOME_OK


def install(middleware: list[ServerMiddleware[Any]]) -> None:
    """Put :class:`RequestSpans` outermost in ``middleware``, in place of the SDK's own."""
    middleware[:] = [m for m in middleware if not isinstance(m, OpenTelemetryMiddleware)]
    middleware.insert(0, RequestSpans())


def _target(ctx: Ctx) -> str | None:
    """The tool or prompt the request names, kept to its echoed form (the span's name)."""
    name = ctx.params.get("name") if ctx.params else None
    return echoed(name) if isinstance(name, str) else None


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _headers(ctx: Ctx) -> Mapping[str, str] | None:
    """The HTTP request's headers (streamable HTTP); stdio has none."""
    headers = getattr(ctx.request, "headers", None)
    return headers if isinstance(headers, Mapping) else None
