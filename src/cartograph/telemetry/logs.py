"""Log lines as JSON objects (``--log-format json``), with the request they belong to.

One object per line on stderr: ``time``, ``level``, ``logger``, ``message``,
and when known ``request_id``, ``method``, ``catalog``, ``server``, ``tool``,
``trace_id``/``span_id`` (the current span, when tracing is on) and ``code``
(the stable error code). The request fields live in a context variable that
the MCP middleware opens per request (:func:`request_fields`) and the
handlers fill in as the request is understood (``spans.annotate``), so any
logger anywhere below gets them without passing them around.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Final

from opentelemetry import trace

MAX_FIELD: Final = 512
"""A field longer than this is cut: a log line is not the place for a payload."""
REQUEST_KEYS: Final = ("request_id", "method", "catalog", "server", "tool")
"""Request facts copied into every line logged while the request runs."""

_FIELDS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "cartograph_log_fields", default=None
)


@contextmanager
def request_fields(**fields: Any) -> Iterator[None]:
    """Open one request's log fields for the duration of the block."""
    token = _FIELDS.set({key: value for key, value in fields.items() if value is not None})
    try:
        yield
    finally:
        _FIELDS.reset(token)


def add_fields(**fields: Any) -> None:
    """Add facts to the current request's log fields (no request open: nothing to do)."""
    current = _FIELDS.get()
    if current is not None:
        current.update(fields)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object (no newlines inside: one line per record)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": _cut(record.getMessage()),
        }
        fields = _FIELDS.get() or {}
        line.update((key, _cut(str(fields[key]))) for key in REQUEST_KEYS if key in fields)
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            line["trace_id"] = trace.format_trace_id(span.trace_id)
            line["span_id"] = trace.format_span_id(span.span_id)
        code = _code(record, fields)
        if code is not None:
            line["code"] = code
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def _code(record: logging.LogRecord, fields: dict[str, Any]) -> str | None:
    """The error code: an explicit ``extra={"code": ...}``, a logged exception's, the request's."""
    explicit = getattr(record, "code", None)
    if isinstance(explicit, str):
        return explicit
    if record.exc_info and record.exc_info[1] is not None:
        raised = getattr(record.exc_info[1], "code", None)
        if isinstance(raised, str):
            return raised
    outcome = fields.get("outcome")
    return outcome if isinstance(outcome, str) and outcome != "ok" else None


def _cut(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 1] + "…"


def formatter(log_format: str) -> logging.Formatter:
    """The formatter for ``log_format``: ``json``, or the human-readable default ``text``."""
    if log_format == "json":
        return JsonFormatter()
    return logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")


def emit(logger: logging.Logger, level: int, message: str) -> None:
    """Hand one record to every root handler whatever their level (a startup announcement)."""
    record = logger.makeRecord(logger.name, level, "(cartograph)", 0, message, (), None)
    for handler in logging.getLogger().handlers:
        handler.handle(record)
