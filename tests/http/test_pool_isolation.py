"""P-POOL-1 over HTTP: each MCP session gets its own stateful upstream session, closed with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.config.model import Config, IndexConfig
from cartograph.server.http import http_app
from tests.helpers.events import alive, wait_gone_async
from tests.helpers.support import scriptable
from tests.http.support import mcp_client, serving, tool_text

pytestmark = pytest.mark.anyio

COUNT = {"server": "counter", "tool": "count", "arguments": {}}
PID = {"server": "counter", "tool": "pid", "arguments": {}}


@pytest.mark.promise("P-POOL-1")
async def test_two_http_sessions_count_independently_and_ending_one_closes_its_upstream(
    tmp_path: Path,
) -> None:
    config = Config(
        state_dir=tmp_path / "state",
        servers=(scriptable("counter"),),
        index=IndexConfig(embedder="fake"),
    )
    async with http_app(config, unsafe_throwaway_key=True) as served:
        with serving(served.app) as base:
            async with mcp_client(f"{base}/mcp", mode="legacy") as bob:
                async with mcp_client(f"{base}/mcp", mode="legacy") as alice:
                    counts: dict[str, list[str]] = {"alice": [], "bob": []}
                    for _ in range(3):  # interleaved: a shared session would count 1..6
                        for name, client in (("alice", alice), ("bob", bob)):
                            counts[name].append(tool_text(await client.call_tool("call", COUNT)))
                    assert counts == {"alice": ["1", "2", "3"], "bob": ["1", "2", "3"]}
                    alice_pid = int(tool_text(await alice.call_tool("call", PID)))
                    bob_pid = int(tool_text(await bob.call_tool("call", PID)))
                    assert alice_pid != bob_pid
                # alice's client ended its MCP session: her upstream goes, bob's stays.
                assert await wait_gone_async(alice_pid)
                assert alive(bob_pid)
                assert tool_text(await bob.call_tool("call", COUNT)) == "4"


def test_client_keys_session_id_else_sessionless_http_else_local() -> None:
    from types import SimpleNamespace

    from starlette.datastructures import Headers

    from cartograph.server.proxy import session_header_key

    def key(request: object) -> str | None:
        return session_header_key(SimpleNamespace(request=request))  # type: ignore[arg-type]

    with_id = SimpleNamespace(headers=Headers({"mcp-session-id": "abc"}))
    modern = SimpleNamespace(headers=Headers({"mcp-protocol-version": "2026-07-28"}))
    assert (key(with_id), key(modern), key(None)) == ("http:abc", "http:sessionless", "local")
