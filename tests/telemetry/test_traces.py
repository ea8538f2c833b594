"""Traces end to end: `serve --http` before a real HTTP upstream, spans to a real OTLP receiver.

The agent is the SDK's streamable-HTTP client sending a W3C ``traceparent``
header; the receiver decodes the exporter's protobuf bodies. What must hold:
one SERVER span per MCP request, parented on the agent's span; ``discover``
and the upstream call as its children with their attributes; the upstream
receives a ``traceparent`` of the same trace; and no argument value appears
in any span.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from tests.helpers.otlp import ReceivedSpan, Receiver, otlp_receiver
from tests.helpers.scriptable import HeaderLog, http_upstream
from tests.helpers.serving import free_port, serve_http
from tests.http.support import mcp_client, serving

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
AGENT_SPAN = "00f067aa0ba902b7"
AGENT_TRACEPARENT = f"00-{TRACE_ID}-{AGENT_SPAN}-01"
CANARY_TASK = "canary-task-7f3a echo a message back"
CANARY_MESSAGE = "canary-argument-91c2"
SECRET = "secret-upstream-token-5d1e"
SERVER_KIND = 2  # OTLP Span.SpanKind: SPAN_KIND_SERVER


def write_config(tmp_path: Path, upstream: str, endpoint: str) -> Path:
    path = tmp_path / "cartograph.toml"
    path.write_text(
        "\n".join(
            [
                f'state_dir = "{tmp_path / "state"}"',
                "[index]",
                'embedder = "fake"',
                "[gateway]",
                f'audit_log = "{tmp_path / "audit.jsonl"}"',
                "[telemetry]",
                "traces = true",
                f'endpoint = "{endpoint}"',
                'service_name = "cartograph-under-test"',
                "[servers.echo]",
                f'url = "{upstream}"',
                'transport = "streamable-http"',
                'headers = { Authorization = "Bearer ${TRACED_UPSTREAM_TOKEN}" }',
                "",
            ]
        ),
        encoding="utf-8",
    )
    return path


@dataclass(frozen=True)
class Traced:
    """One run: the agent's two calls are done, every span received, serve has exited."""

    receiver: Receiver
    upstream: HeaderLog
    stderr: bytes
    exit_code: int
    audit: list[dict[str, object]]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    tmp_path = tmp_path_factory.mktemp("traced")
    log = HeaderLog()
    with (
        pytest.MonkeyPatch.context() as env,
        serving(http_upstream(log)) as base,
        otlp_receiver() as receiver,
    ):
        env.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # export batches quickly
        env.setenv("TRACED_UPSTREAM_TOKEN", SECRET)
        config = write_config(tmp_path, f"{base}/mcp", receiver.endpoint)
        with serve_http(config, "--log-format", "json", "--debug") as served:
            anyio.run(drive, served.base)
            assert receiver.wait_for(complete)
            served.signal(signal.SIGTERM)
            code = served.wait()
        audit = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
        yield Traced(receiver, log, bytes(served.stderr), code, [json.loads(a) for a in audit])


async def drive(base: str) -> None:
    async with mcp_client(f"{base}/mcp", headers={"traceparent": AGENT_TRACEPARENT}) as client:
        found = await client.call_tool("discover", {"task": CANARY_TASK, "k": 3})
        assert not found.is_error
        called = await client.call_tool(
            "call", {"server": "echo", "tool": "echo", "arguments": {"message": CANARY_MESSAGE}}
        )
        assert not called.is_error


def only(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    matching = [s for s in spans if s.name == name]
    assert len(matching) == 1, [s.name for s in spans]
    return matching[0]


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [s for s in spans if s.parent_span_id == parent.span_id]


def complete(spans: list[ReceivedSpan]) -> bool:
    names = [s.name for s in spans]
    return {"tools/call discover", "tools/call call", "discover", "upstream tools/call"} <= set(
        names
    ) and any(n.startswith("MCP send tools/call") for n in names)


def test_each_mcp_request_is_a_server_span_under_the_agents_traceparent(
    traced: Traced,
) -> None:
    spans = traced.receiver.spans
    for name, tool in (("tools/call discover", "discover"), ("tools/call call", "call")):
        request = only(spans, name)
        assert (request.trace_id, request.parent_span_id) == (TRACE_ID, AGENT_SPAN)
        assert request.kind == SERVER_KIND
        assert request.attributes["mcp.method.name"] == "tools/call"
        assert request.attributes["gen_ai.tool.name"] == tool
        assert request.attributes["cartograph.catalog"] == "default"
        assert request.attributes["cartograph.outcome"] == "ok"
        assert request.resource["service.name"] == "cartograph-under-test"


def test_discover_and_the_upstream_call_are_children_of_their_request_span(
    traced: Traced,
) -> None:
    spans = traced.receiver.spans
    discover = only(spans, "discover")
    assert discover.parent_span_id == only(spans, "tools/call discover").span_id
    assert discover.attributes["cartograph.discover.k"] == 3
    assert discover.attributes["cartograph.discover.abstained"] in (True, False)
    assert 0 < discover.attributes["cartograph.discover.candidates"] <= 3
    upstream = only(spans, "upstream tools/call")
    request = only(spans, "tools/call call")
    assert upstream.parent_span_id == request.span_id
    assert (upstream.attributes["cartograph.server"], upstream.attributes["cartograph.tool"]) == (
        "echo",
        "echo",
    )
    assert upstream.attributes["cartograph.transport"] == "streamable-http"
    assert request.attributes["cartograph.server"] == "echo"
    sends = [s for s in children(spans, upstream) if s.name.startswith("MCP send tools/call")]
    assert len(sends) == 1  # the SDK's client span, inside ours


def test_the_http_upstream_receives_a_traceparent_of_the_same_trace(
    traced: Traced,
) -> None:
    send = next(s for s in traced.receiver.spans if s.name.startswith("MCP send tools/call"))
    stamped = [r["traceparent"] for r in traced.upstream.requests if "traceparent" in r]
    assert f"00-{TRACE_ID}-{send.span_id}-01" in stamped
    assert all(value.split("-")[1] == TRACE_ID for value in stamped if TRACE_ID in value)


def test_no_argument_value_reaches_a_span(
    traced: Traced,
) -> None:
    spans = traced.receiver.spans
    everything = json.dumps([s.attributes for s in spans] + [s.name for s in spans])
    assert "canary" not in everything


@pytest.mark.promise("P-LOG-1")
def test_the_upstream_credential_reaches_neither_a_span_nor_a_json_log_line(traced: Traced) -> None:
    assert any(r.get("authorization") == f"Bearer {SECRET}" for r in traced.upstream.requests)
    spans = traced.receiver.spans
    assert SECRET not in json.dumps([[s.name, s.attributes, s.resource] for s in spans])
    assert SECRET not in traced.stderr.decode("utf-8")  # --debug included


def test_with_json_logs_every_stderr_line_is_one_json_object(traced: Traced) -> None:
    lines = traced.stderr.decode("utf-8").splitlines()
    assert traced.exit_code == 0
    assert lines
    parsed = [json.loads(line) for line in lines]
    assert all(
        isinstance(p, dict) and {"time", "level", "logger", "message"} <= p.keys() for p in parsed
    )
    assert any(p["message"].startswith("cartograph serving on http://127.0.0.1:") for p in parsed)


def test_json_log_lines_inside_a_request_carry_its_id_catalog_and_trace(traced: Traced) -> None:
    parsed = [json.loads(line) for line in traced.stderr.decode("utf-8").splitlines()]
    in_request = [p for p in parsed if "request_id" in p]
    assert in_request
    assert {p["trace_id"] for p in in_request} == {TRACE_ID}
    assert any(p.get("catalog") == "default" and p.get("server") == "echo" for p in in_request)


def test_with_the_collector_down_requests_are_still_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACED_UPSTREAM_TOKEN", SECRET)
    log = HeaderLog()
    with serving(http_upstream(log)) as base:
        nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens: every export fails
        with serve_http(write_config(tmp_path, f"{base}/mcp", nowhere)) as served:
            anyio.run(drive, served.base)


def test_the_audit_record_names_the_agents_traceparent_from_its_http_header(traced: Traced) -> None:
    assert [(r["proxy_tool"], r["trace"]) for r in traced.audit] == [
        ("discover", AGENT_TRACEPARENT),
        ("call", AGENT_TRACEPARENT),
    ]
