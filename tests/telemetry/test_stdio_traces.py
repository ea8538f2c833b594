"""Traces on stdio: `cartograph serve` driven by the SDK stdio client, spans to an OTLP receiver.

Over stdio there are no headers: the agent's trace context travels in the
request's ``_meta`` (SEP-414), and the request span takes it as its parent.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import cast

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import RequestParamsMeta

from tests.helpers.otlp import ReceivedSpan, otlp_receiver
from tests.helpers.support import SCRIPTABLE

SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
AGENT_SPAN = "b7ad6b7169203331"
# An open TypedDict (PEP 728 extra_items), which mypy does not read yet: hence the cast.
AGENT_META = cast(RequestParamsMeta, {"traceparent": f"00-{TRACE_ID}-{AGENT_SPAN}-01"})


def write_config(tmp_path: Path, endpoint: str) -> Path:
    path = tmp_path / "cartograph.toml"
    lines = [
        f'state_dir = "{tmp_path / "state"}"',
        "[index]",
        'embedder = "fake"',
        "[telemetry]",
        "traces = true",
        f'endpoint = "{endpoint}"',
        "[servers.faults]",
        f'command = "{sys.executable}"',
        f'args = ["{SCRIPTABLE}"]',
        'protocol = "legacy"',
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def has_call_tree(spans: list[ReceivedSpan]) -> bool:
    names = {s.name for s in spans}
    return {"tools/call call", "upstream tools/call"} <= names


@pytest.mark.anyio
async def test_a_stdio_request_span_takes_its_parent_from_meta_and_has_the_upstream_child(
    tmp_path: Path,
) -> None:
    with otlp_receiver() as receiver:
        params = StdioServerParameters(
            command=sys.executable,
            args=[*SERVE, "--config", str(write_config(tmp_path, receiver.endpoint))],
            cwd=Path.cwd(),
            env={**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "50"},
        )
        async with Client(params) as client:
            result = await client.call_tool(
                "call",
                {"server": "faults", "tool": "echo", "arguments": {"text": "hi"}},
                meta=AGENT_META,
            )
            assert not result.is_error
            assert await anyio.to_thread.run_sync(receiver.wait_for, has_call_tree)
        spans = receiver.spans
    request = next(s for s in spans if s.name == "tools/call call")
    assert (request.trace_id, request.parent_span_id) == (TRACE_ID, AGENT_SPAN)
    assert request.attributes["cartograph.outcome"] == "ok"
    upstream = next(s for s in spans if s.name == "upstream tools/call")
    assert upstream.parent_span_id == request.span_id
    assert upstream.attributes["cartograph.transport"] == "stdio"
