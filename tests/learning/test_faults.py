"""A usage log that cannot open or write costs learning, never serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cartograph.errors import UsageLogError
from cartograph.learning.sqlite import usage_log_path
from tests.helpers.support import scriptable
from tests.server.support import call, running


@pytest.mark.anyio
async def test_a_corrupt_log_turns_learning_off_and_the_proxy_still_serves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    usage_log_path(state).write_bytes(b"\x00garbage, not sqlite\x00" * 64)
    async with running(state, scriptable("calc"), learning=True) as handlers:
        assert handlers.runtime.learning is None
        found: Any = await handlers.call_tool(
            "discover", {"task": "add two integers"}, principal=None
        )
        assert not found.is_error
        assert (await call(handlers, "calc", "add", a=1, b=2)).is_error is False
    assert "usage_log_corrupt" in caplog.text


@pytest.mark.anyio
async def test_a_failing_write_is_logged_and_the_answer_still_goes_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(tmp_path / "state", scriptable("calc"), learning=True) as handlers:
        learning = handlers.runtime.learning
        assert learning is not None

        def disk_full(*_: Any, **__: Any) -> None:
            raise UsageLogError("database or disk is full", code="usage_log_io")

        found: Any = await handlers.call_tool(
            "discover", {"task": "add two integers"}, principal=None
        )
        monkeypatch.setattr(learning.store, "add_call", disk_full)  # the call's row fails
        result = await call(handlers, "calc", "add", a=20, b=22)
        assert not result.is_error
        assert "usage_log_io" in caplog.text
        caplog.clear()
        monkeypatch.setattr(learning.store, "add_task", disk_full)  # the discover's row fails
        found = await handlers.call_tool("discover", {"task": "add two integers"}, principal=None)
        assert not found.is_error and found.structured_content["tools"]
    assert "usage_log_io" in caplog.text
