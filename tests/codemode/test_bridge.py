"""The bridge on its own: a program's tool calls go through the mount's call entry.

:class:`CodeTool` is driven directly here (no ``run`` in ``tools/list``), over a
real runtime and the scriptable ``notes`` upstream: what it proves holds
whichever mount hands it a request.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.calls.request import CallRequest
from cartograph.codemode import RunId
from cartograph.config.model import CodeModeConfig
from cartograph.gateway.audit import kept_records
from cartograph.server.code_tool import CodeTool
from tests.codemode.support import notes
from tests.server.support import running


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-2")
async def test_each_inner_call_is_a_call_of_the_mount_with_the_run_s_traceparent(
    tmp_path: Path,
) -> None:
    run = RunId.new()
    async with running(tmp_path, notes()) as handlers:
        tool = CodeTool(handlers, CodeModeConfig(enabled=True, wall_time=20.0))
        try:
            request = CallRequest(
                catalog="default",
                principal="pat",
                name="run",
                arguments={
                    "code": "[await notes.read_note(n) for n in inputs['names']]",
                    "inputs": {"names": ["alpha", "gamma"]},
                },
                client="session-1",
                trace=run.traceparent,
            )
            result = await tool.run(request)
        finally:
            await tool.aclose()
        records = kept_records(handlers.audit)
    assert result.structured_content is not None
    assert result.structured_content["value"] == ["one two three", "six"]
    assert result.structured_content["run"] == run.id
    assert [(r.proxy_tool, r.server, r.tool, r.principal, r.trace) for r in records] == [
        ("call", "notes", "read_note", "pat", run.traceparent),
        ("call", "notes", "read_note", "pat", run.traceparent),
    ]


def test_a_run_is_named_by_a_valid_traceparent_and_mints_one_otherwise() -> None:
    sent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert RunId.of(sent).traceparent == sent
    assert RunId.of(sent).id == "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"
    for bad in (None, "", "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "not-a-traceparent"):
        minted = RunId.of(bad)
        assert minted.traceparent != bad
        assert RunId.of(minted.traceparent) == minted


def test_the_call_log_the_agent_reads_folds_runs_of_like_calls() -> None:
    from cartograph.codemode.bridge import CallLine
    from cartograph.codemode.run import grouped

    calls = (
        CallLine("notes/list_notes", "ok", 3.0),
        *(CallLine("notes/read_note", "ok", 2.0) for _ in range(3)),
        CallLine("notes/read_note", "tool_denied", 1.0),
    )
    assert grouped(calls) == [
        "notes/list_notes ok 3 ms",
        "notes/read_note ok ×3 6 ms",
        "notes/read_note tool_denied 1 ms",
    ]
