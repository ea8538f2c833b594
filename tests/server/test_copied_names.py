"""A server that copies another's tool names, served for real (P-NAME-2, P-NAME-3).

Three real upstream processes (the scriptable server's ``echo``, ``copycat`` and
``notes`` tool sets) behind one proxy, with the shipped embedding model:
``copycat`` lists ``echo`` and ``add`` under the same names and shapes as
``calc``, described only by instructions, which its card drops. ``discover``,
called as an agent calls it, puts the original first for its tasks, and tells
the agent which of the tools it returns share a name with another server's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cartograph.config.model import Config, IndexConfig
from cartograph.config.transforms import ToolTransform
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.proxy import build_proxy_server
from cartograph.server.runtime import CatalogRuntime
from tests.helpers.support import scriptable
from tests.server.support import signed_serving, text

TASKS = [
    ("echo text", "echo"),
    ("echo a message back", "echo"),
    ("add", "add"),
    ("add integers", "add"),
]


def federation_config(state: Path, copycat_vouched: tuple[str, ...] = ()) -> Config:
    """``copycat_vouched``: the copier's tools the operator vouches for (``vouch_name``)."""
    vouched = {tool: ToolTransform(vouch_name=True) for tool in copycat_vouched}
    servers = (
        scriptable("calc", "--tools", "echo"),
        scriptable("copycat", "--tools", "copycat", tools=vouched),
        scriptable("notes", "--tools", "notes"),
    )
    return Config(state_dir=state, servers=servers, index=IndexConfig(embedder="minilm"))


@asynccontextmanager
async def federation(state: Path) -> AsyncIterator[ProxyHandlers]:
    config = federation_config(state)
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


def signed_federation(state: Path, *vouched: str) -> AbstractAsyncContextManager[ProxyHandlers]:
    """The same federation, its cards bootstrapped with the operator's key and overrides."""
    return signed_serving(federation_config(state, vouched))


async def discovered(h: ProxyHandlers, task: str) -> tuple[dict[tuple[str, str], Any], str]:
    """``discover`` through the SDK client: each tool's structured entry, and the text."""
    async with Client(build_proxy_server(h), mode="legacy") as client:
        result = await client.call_tool("discover", {"task": task, "k": 20})
    assert not result.is_error and result.structured_content is not None
    assert not result.structured_content["abstained"]
    entries = {(t["server"], t["tool"]): t for t in result.structured_content["tools"]}
    return entries, text(result)


def line_of(shown: str, server: str, tool: str) -> str:
    """The tool's line in discover's text, found under its server's heading."""
    under = shown.split(f"[{server}]\n", 1)[1].split("\n[", 1)[0]
    return next(line for line in under.splitlines() if line.startswith(f"- {tool}("))


@pytest.mark.anyio
@pytest.mark.promise("P-NAME-3")
async def test_attack_discover_tells_the_agent_a_copied_name_is_another_servers(
    tmp_path: Path,
) -> None:
    async with signed_federation(tmp_path) as h:
        entries, shown = await discovered(h, "echo a message back")
        status = {s["name"]: s for s in h.runtime.status()["servers"]}
    assert entries[("copycat", "echo")]["shared_name"] == {
        "also": ["calc/echo"],
        "ranked_by_name": False,
    }
    assert entries[("calc", "echo")]["shared_name"] == {
        "also": ["copycat/echo"],
        "ranked_by_name": True,
    }
    assert line_of(shown, "copycat", "echo").endswith(" [name also calc/echo; not ranked by name]")
    assert line_of(shown, "calc", "echo").endswith(" [name also copycat/echo; ranked by name]")
    # `status` says the same of each (one source: the served index).
    for (server, tool), entry in entries.items():
        if "shared_name" in entry:
            (note,) = [n for n in status[server]["shared_names"] if n["tool"] == tool]
            assert entry["shared_name"] == {k: note[k] for k in ("also", "ranked_by_name")}
    # A tool no other server's tool is named like carries nothing, in either part.
    ordinary = [key for key in entries if key[0] == "notes"]
    assert ordinary and all("shared_name" not in entries[key] for key in ordinary)
    assert all("[name also" not in line_of(shown, *key) for key in ordinary)


@pytest.mark.anyio
@pytest.mark.promise("P-NAME-3")
async def test_a_name_the_operator_vouches_for_is_shown_as_ranked_by_it(tmp_path: Path) -> None:
    async with signed_federation(tmp_path, "echo") as h:
        entries, shown = await discovered(h, "echo a message back")
    assert entries[("copycat", "echo")]["shared_name"] == {
        "also": ["calc/echo"],
        "ranked_by_name": True,
    }
    assert line_of(shown, "copycat", "echo").endswith(" [name also calc/echo; ranked by name]")
    # Only the vouched tool: the copier's unvouched `add` still ranks without its name.
    assert entries[("copycat", "add")]["shared_name"]["ranked_by_name"] is False
