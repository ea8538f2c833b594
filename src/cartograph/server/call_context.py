"""Who is calling: the per-request context the transports set for the handlers."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from mcp.shared.dispatcher import ProgressFnT

from cartograph.calls.pipeline import Authorize as Authorize  # the mounts import it here


@dataclass(frozen=True)
class CallContext:
    """Who is calling, set by the transport for the duration of one request.

    A context variable rather than a parameter so surfaces layered on top of
    the handlers (the routed mount) need not thread it through.
    """

    client: str | None = None
    progress: ProgressFnT | None = None
    principal: str | None = None
    trace: str | None = None
    """The W3C ``traceparent`` of the request's ``_meta``; the audit record keeps it."""


CALL_CONTEXT: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "cartograph_call_context", default=None
)


def current_client() -> str | None:
    context = CALL_CONTEXT.get()
    return context.client if context is not None else None
