"""Traces and structured logs: what operators read besides ``/metrics`` (docs/fleet.md).

:mod:`.spans` calls the OpenTelemetry API (always installed, a no-op by
default); :mod:`.tracing` installs the SDK and the OTLP/HTTP exporter from the
optional extra ``cartograph[otel]`` when ``[telemetry] traces = true``;
:mod:`.logs` formats log records as JSON lines with the request they belong
to. A leaf package: every layer may open a span or annotate the current one.
"""

from __future__ import annotations

from cartograph.telemetry.logs import JsonFormatter, request_fields
from cartograph.telemetry.spans import annotate, finish, inject, parent_from, span
from cartograph.telemetry.tracing import Tracing, start_tracing

__all__ = [
    "JsonFormatter",
    "Tracing",
    "annotate",
    "finish",
    "inject",
    "parent_from",
    "request_fields",
    "span",
    "start_tracing",
]
