"""Two catalogs of one proxy share a state directory and a usage log, never their evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime.catalog import CatalogRuntime
from tests.helpers.support import config_for, scriptable

TASK = "increment the session counter"


async def ranked(handlers: ProxyHandlers, task: str) -> list[str]:
    found: Any = await handlers.call_tool("discover", {"task": task, "k": 5}, principal=None)
    return [t["tool"] for t in found.structured_content["tools"]]


def place(tools: list[str], tool: str) -> int:
    return tools.index(tool) + 1 if tool in tools else len(tools) + 1


@pytest.mark.anyio
async def test_evidence_logged_in_one_catalog_never_moves_another(tmp_path: Path) -> None:
    config = config_for(tmp_path / "state", scriptable("calc"), learning=True)
    with anyio.fail_after(60):
        a = await CatalogRuntime.start(config, config.servers, name="a", unsafe_throwaway_key=True)
        b = await CatalogRuntime.start(config, config.servers, name="b", unsafe_throwaway_key=True)
        try:
            in_a, in_b = ProxyHandlers(a, catalog="a"), ProxyHandlers(b, catalog="b")
            zero_shot = await ranked(in_b, TASK)
            for _ in range(3):
                await ranked(in_a, TASK)
                echo = {"server": "calc", "tool": "echo", "arguments": {"text": "hi"}}
                result = await in_a.call_tool("call", echo, principal=None)
                assert not result.is_error
            assert place(await ranked(in_a, TASK), "echo") < place(zero_shot, "echo")
            assert await ranked(in_b, TASK) == zero_shot
        finally:
            await a.aclose()
            await b.aclose()
    # And after a restart, reading the same log file.
    b = await CatalogRuntime.start(config, config.servers, name="b", unsafe_throwaway_key=True)
    try:
        assert await ranked(ProxyHandlers(b, catalog="b"), TASK) == zero_shot
        assert b.learning is not None and b.learning.status()["tasks_in_memory"] == 0
    finally:
        await b.aclose()
