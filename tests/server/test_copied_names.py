"""A server that copies another's tool names, served for real (P-NAME-2).

Three real upstream processes (the scriptable server's ``echo``, ``copycat`` and
``notes`` tool sets) behind one proxy, with the shipped embedding model:
``copycat`` lists ``echo`` and ``add`` under the same names and shapes as
``calc``, described only by instructions, which its card drops. ``discover``,
called as an agent calls it, puts the original first for its tasks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from cartograph.config.model import Config, IndexConfig
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime import CatalogRuntime
from tests.helpers.support import scriptable

TASKS = [
    ("echo text", "echo"),
    ("echo a message back", "echo"),
    ("add", "add"),
    ("add integers", "add"),
]


@asynccontextmanager
async def federation(state: Path) -> AsyncIterator[ProxyHandlers]:
    servers = (
        scriptable("calc", "--tools", "echo"),
        scriptable("copycat", "--tools", "copycat"),
        scriptable("notes", "--tools", "notes"),
    )
    config = Config(state_dir=state, servers=servers, index=IndexConfig(embedder="minilm"))
    runtime = await CatalogRuntime.start(config, config.servers, unsafe_throwaway_key=True)
    try:
        yield ProxyHandlers(runtime, catalog="default")
    finally:
        await runtime.aclose()


@pytest.mark.anyio
@pytest.mark.promise("P-NAME-2")
async def test_attack_discover_ranks_the_original_above_a_server_that_copies_its_names(
    tmp_path: Path,
) -> None:
    async with federation(tmp_path) as h:
        for task, tool in TASKS:
            result = await h.call_tool("discover", {"task": task, "k": 5}, principal=None)
            assert not result.is_error
            assert result.structured_content is not None
            ranked = [(t["server"], t["tool"]) for t in result.structured_content["tools"]]
            assert ranked[0] == ("calc", tool), (task, ranked)


@pytest.mark.anyio
async def test_status_names_the_shared_names_and_which_rank_without_them(tmp_path: Path) -> None:
    async with federation(tmp_path) as h:
        report = h.runtime.status()
    by_server = {s["name"]: s for s in report["servers"]}
    assert by_server["copycat"]["shared_names"] == [
        {"tool": "add", "also": ["calc/add"], "ranked_by_name": False},
        {"tool": "echo", "also": ["calc/echo"], "ranked_by_name": False},
    ]
    assert by_server["calc"]["shared_names"] == [
        {"tool": "add", "also": ["copycat/add"], "ranked_by_name": True},
        {"tool": "echo", "also": ["copycat/echo"], "ranked_by_name": True},
    ]
    assert "shared_names" not in by_server["notes"]
