"""Spans through the OpenTelemetry *API*: no-ops until :mod:`.tracing` installs the SDK.

The API is always present (the MCP SDK depends on it), so the request path
calls it unconditionally: without ``[telemetry] traces = true`` the global
tracer is the API's no-op and a span costs a function call. Attribute values
are facts Cartograph decided (catalog, server, tool, outcome, counts), never a
caller's argument values, tokens or headers.
"""

from __future__ import annotations

from asyncio import CancelledError
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, Final

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, StatusCode

from cartograph import __version__
from cartograph.echo import echoed
from cartograph.telemetry import logs

TRACER_NAME: Final = "cartograph"
PREFIX: Final = "cartograph."
OUTCOME_OK: Final = "ok"
TOOL_ERROR: Final = "tool_error"
"""Outcome of a tool result marked ``isError`` with no Cartograph code (the tool itself failed)."""
MAX_TRACEPARENT: Final = 128
"""Longer values are not W3C trace context (55 characters); they are never parsed."""

Attribute = str | bool | int | float

_tracer = trace.get_tracer(TRACER_NAME, __version__)


@contextmanager
def span(
    name: str,
    attributes: Mapping[str, Attribute | None] | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: Context | None = None,
) -> Iterator[Span]:
    """A current span named ``name``; an escaping exception marks it failed (type only).

    The exception's message is not recorded: messages can quote upstream text.

    Without a tracer provider (``[telemetry] traces`` off, nothing else installed
    one) and without a parent to adopt, the API's no-op span would only re-attach
    the current span context: that span is yielded as it is, which spares the
    context attach/detach (a pooled ``call`` opens three spans).
    """
    if parent is None and _no_tracer():
        yield trace.get_current_span()
        return
    with _tracer.start_as_current_span(
        name,
        context=parent,
        kind=kind,
        attributes=_clean(attributes or {}),
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            finish(current, code_of(exc))
            raise


def _no_tracer() -> bool:
    """True while the global tracer provider is the API's proxy or no-op (no SDK set)."""
    return isinstance(trace.get_tracer_provider(), _NO_OP_PROVIDERS)


_NO_OP_PROVIDERS: Final = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)


def code_of(exc: BaseException) -> str:
    """The stable code an exception carries: Cartograph's, a JSON-RPC error's ``data.code``
    (else its number), ``cancelled``, or the exception's type name."""
    data = getattr(exc, "data", None)
    if isinstance(data, Mapping) and isinstance(data.get("code"), str):
        return str(data["code"])
    code = getattr(exc, "code", None)
    if isinstance(code, str | int) and not isinstance(code, bool):
        return str(code)
    if isinstance(exc, CancelledError) or type(exc).__name__ == "Cancelled":
        return "cancelled"
    return type(exc).__name__


def annotate(**facts: Attribute | None) -> None:
    """Add ``facts`` to the current span (as ``cartograph.<name>``) and to the request's log fields.

    ``None`` values are skipped, so callers pass what they know without checks. A text
    value (a server, tool or resource a caller named) is kept to its :func:`echoed` form.
    """
    known = _clean(facts)
    if not known:
        return
    logs.add_fields(**known)
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes({PREFIX + key: value for key, value in known.items()})


def finish(current: Span, outcome: str) -> None:
    """Record how the span's work ended: ``ok`` or the stable error code."""
    if not current.is_recording():
        return
    current.set_attribute(PREFIX + "outcome", outcome)
    if outcome != OUTCOME_OK:
        current.set_attribute("error.type", outcome)
        current.set_status(StatusCode.ERROR)


def parent_from(
    meta: Mapping[str, Any] | None, headers: Mapping[str, str] | None
) -> Context | None:
    """The caller's trace context: the request's ``_meta`` first (SEP-414), else its HTTP headers.

    ``None`` when neither carries a valid ``traceparent``, so the span starts a
    new trace instead of hanging off an invalid parent.
    """
    for carrier in (_w3c(meta), _w3c(headers)):
        if carrier is None:
            continue
        found = propagate.extract(carrier)
        if trace.get_current_span(found).get_span_context().is_valid:
            return found
    return None


def _w3c(carrier: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not carrier:
        return None
    parent = carrier.get("traceparent")
    if not isinstance(parent, str) or not parent or len(parent) > MAX_TRACEPARENT:
        return None
    found = {"traceparent": parent}
    state = carrier.get("tracestate")
    if isinstance(state, str) and len(state) <= logs.MAX_FIELD:
        found["tracestate"] = state
    return found


def inject(headers: MutableMapping[str, str]) -> None:
    """Write the current span's W3C ``traceparent`` (and ``tracestate``) into ``headers``."""
    if trace.get_current_span().get_span_context().is_valid:
        propagate.inject(headers)


def current_ids() -> tuple[str, str] | None:
    """The current span's (trace id, span id) in W3C hex, when a span is recording."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)


def _clean(attributes: Mapping[str, Attribute | None]) -> dict[str, Attribute]:
    """The attributes that are set, each text kept to its :func:`echoed` form."""
    return {
        key: echoed(value) if isinstance(value, str) else value
        for key, value in attributes.items()
        if value is not None
    }
