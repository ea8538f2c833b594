"""A real OTLP/HTTP trace receiver on 127.0.0.1, decoded with opentelemetry-proto.

It accepts ``POST /v1/traces`` bodies in the OTLP wire format (a protobuf
``ExportTraceServiceRequest``), answers with an empty
``ExportTraceServiceResponse`` as a collector does, and keeps every span as a
:class:`ReceivedSpan` (ids in W3C hex, attributes as plain values). Tests wait
on :meth:`Receiver.wait_for` (a condition, bounded) rather than sleeping.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int


@dataclass
class Receiver:
    """The spans received so far, and the URL to send them to."""

    endpoint: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    bodies: int = 0
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def add(self, spans: list[ReceivedSpan]) -> None:
        with self._changed:
            self.spans.extend(spans)
            self.bodies += 1
            self._changed.notify_all()

    def wait_for(self, done: Callable[[list[ReceivedSpan]], bool], limit: float = 60.0) -> bool:
        """Block until ``done(spans)`` holds (True) or ``limit`` seconds pass (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: done(list(self.spans)), timeout=limit)

    def named(self, name: str) -> list[ReceivedSpan]:
        with self._changed:
            return [s for s in self.spans if s.name == name]


def decode(body: bytes) -> list[ReceivedSpan]:
    """Every span in one ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    found: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        resource=resource,
                        status_code=span.status.code,
                    )
                )
    return found


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


@contextlib.contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """Listen on a free loopback port in a thread until the block ends."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != TRACES_PATH or "protobuf" not in self.headers.get("Content-Type", ""):
                self.send_error(404)
                return
            receiver.add(decode(body))
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=15)
