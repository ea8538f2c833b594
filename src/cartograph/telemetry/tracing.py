"""Installing the OpenTelemetry SDK and its OTLP/HTTP exporter (``cartograph[otel]``).

Only :func:`start_tracing` imports the extra, and only when traces are asked
for: without it Cartograph imports and runs exactly as before, and asking
for traces without it is a :class:`~cartograph.errors.ConfigError` that says
what to install. The standard variables are honoured where the config file
is silent: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the full URL),
``OTEL_EXPORTER_OTLP_ENDPOINT`` (the base, ``/v1/traces`` appended),
``OTEL_SERVICE_NAME``, and ``OTEL_SDK_DISABLED=true`` turns tracing off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from cartograph import __version__
from cartograph import error_codes as codes
from cartograph.errors import ConfigError

DEFAULT_ENDPOINT: Final = "http://localhost:4318"
"""The OTLP/HTTP port every collector listens on by default."""
DEFAULT_SERVICE_NAME: Final = "cartograph"
TRACES_PATH: Final = "/v1/traces"
INSTALL_HINT: Final = "pip install 'cartograph[otel]'"


@dataclass(frozen=True)
class Tracing:
    """Tracing as it was started: where spans go, and how to flush them at exit."""

    endpoint: str
    service_name: str
    shutdown: Callable[[], None]


def traces_endpoint(configured: str | None, environ: Mapping[str, str]) -> str:
    """The URL spans are POSTed to: the file's, else the standard variables', else localhost."""
    full = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if configured is None and full:
        return check_endpoint(full, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    base = configured or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT
    where = "[telemetry] endpoint" if configured else "OTEL_EXPORTER_OTLP_ENDPOINT"
    base = check_endpoint(base, where)
    return base if base.rstrip("/").endswith(TRACES_PATH) else base.rstrip("/") + TRACES_PATH


def check_endpoint(url: str, where: str) -> str:
    """``url`` when it is an http(s) URL with a host; a ConfigError naming ``where`` otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{where} must be an http:// or https:// URL of an OTLP/HTTP collector "
            "(e.g. http://127.0.0.1:4318)",
            code=codes.TELEMETRY_ENDPOINT,
        )
    return url


def disabled(environ: Mapping[str, str]) -> bool:
    """``OTEL_SDK_DISABLED=true``: the standard off switch wins over the file."""
    return environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def start_tracing(
    *,
    endpoint: str | None,
    service_name: str | None,
    sample_ratio: float,
    timeout: float,
    environ: Mapping[str, str],
) -> Tracing:
    """Install a tracer provider exporting to OTLP/HTTP in batches (off the request path).

    The provider is process-global, so the MCP SDK's own client spans (and the
    ``traceparent`` it puts in each upstream request's ``_meta``) join the
    same traces. Raises :class:`ConfigError` (``otel_not_installed``) when the
    extra is missing.
    """
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
    except ImportError as exc:
        raise ConfigError(
            f"[telemetry] traces = true needs the OpenTelemetry SDK and exporter: {INSTALL_HINT}",
            code=codes.OTEL_NOT_INSTALLED,
        ) from exc
    url = traces_endpoint(endpoint, environ)
    name = service_name or environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    provider = TracerProvider(
        resource=Resource.create({"service.name": name, "service.version": __version__}),
        sampler=ParentBased(TraceIdRatioBased(sample_ratio)),
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url, timeout=timeout)))
    trace.set_tracer_provider(provider)
    return Tracing(endpoint=url, service_name=name, shutdown=provider.shutdown)
