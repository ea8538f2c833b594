"""The span helper without a tracer: what the request path pays, and what it must still carry."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import context, propagate, trace

from cartograph.telemetry import span

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def no_tracer(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """No global tracer provider; every context attach is counted."""
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    attached: list[Any] = []
    real = context.attach

    def counting(ctx: Any) -> Any:
        attached.append(ctx)
        return real(ctx)

    monkeypatch.setattr(context, "attach", counting)
    return attached


def test_a_span_without_a_tracer_or_a_parent_leaves_the_context_alone(
    no_tracer: list[Any],
) -> None:
    before = trace.get_current_span()
    with span("upstream tools/call", {"cartograph.server": "calc"}) as current:
        assert current is before
        assert trace.get_current_span() is before
    assert no_tracer == []


def test_a_span_without_a_tracer_still_adopts_the_callers_trace(no_tracer: list[Any]) -> None:
    parent = propagate.extract({"traceparent": TRACEPARENT})
    with span("tools/call", parent=parent), span("upstream tools/call"):
        inside = trace.get_current_span().get_span_context()
    assert format(inside.trace_id, "032x") == TRACEPARENT.split("-")[1]
    assert no_tracer != []
