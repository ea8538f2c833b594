"""An agent's SDK client drives `cartograph serve` over the real demo federation.

It discovers tools for everyday tasks and calls what it found on four
different real servers, all through the proxy's one `call` tool.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import Client

from cartograph.demo import agent
from cartograph.demo.loopback import DEMO_HTTP_PORT_ENV
from tests.demo.support import CONFIG

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.anyio]


async def discovered_call(
    client: Client, task: str, server: str, tool: str, arguments: dict[str, Any]
) -> str:
    """Discover for ``task``, insist the tool is among the results, then call it."""
    found = await agent.discover(client, task)
    assert found.has(server, tool), (task, [(t.server, t.tool) for t in found.tools])
    (seen,) = [t.text for t in found.tools if (t.server, t.tool) == (server, tool)]
    assert seen.startswith(f"{tool}(") and seen in found.text, found.text  # what the agent read
    for argument in arguments:
        assert argument in seen, (argument, seen)  # the text names every argument it passes
    result = await agent.call(client, server, tool, arguments)
    assert not result.is_error, agent.result_text(result)
    return agent.result_text(result)


async def test_an_sdk_client_discovers_and_calls_tools_on_four_real_servers(
    attested_state: Path, http_port: int, serve_log: TextIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEMO_HTTP_PORT_ENV, str(http_port))
    entity = f"cartograph-test-{uuid.uuid4().hex[:8]}"
    with anyio.fail_after(240):
        async with agent.proxy_client(CONFIG, state_dir=attested_state, errlog=serve_log) as client:
            names, _ = await agent.list_proxy_tools(client)
            assert names == ["discover", "status", "call", "run"]  # code mode is on in the demo

            now = await discovered_call(
                client, "what time is it in Tokyo", "time", "get_current_time",
                {"timezone": "Asia/Tokyo"},
            )  # fmt: skip
            assert "Asia/Tokyo" in now

            listing = await discovered_call(
                client, "list the files in the project folder", "filesystem", "list_directory",
                {"path": str(CONFIG.parent / "files")},
            )  # fmt: skip
            assert "README.txt" in listing

            echoed = await discovered_call(
                client, "echo a message back", "everything", "echo", {"message": entity}
            )
            assert entity in echoed

            fact = {"name": entity, "entityType": "person", "observations": ["likes tea"]}
            await discovered_call(
                client, "store a fact about a person in the knowledge graph", "memory",
                "create_entities", {"entities": [fact]},
            )  # fmt: skip
            try:
                graph = agent.result_text(await agent.call(client, "memory", "read_graph", {}))
                assert entity in graph and "likes tea" in graph
            finally:
                await agent.call(client, "memory", "delete_entities", {"entityNames": [entity]})

            status = await agent.status(client, detail=True)
            calls = {s["name"]: s["calls"] for s in status["servers"]}
            assert all(calls[s] for s in ("time", "filesystem", "everything", "memory")), calls
            assert json.dumps(status["totals"])  # JSON-safe, as an agent receives it
