"""P-REL-12 in the gateway: upstream sessions are capped, expire when idle, and a timed-out
session is recycled rather than reused half-read. Real scriptable upstreams over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult

from cartograph.server.handlers import ProxyHandlers
from tests.helpers.events import wait_gone_async
from tests.helpers.support import scriptable
from tests.server.support import call, code, running, text, wait_until

pytestmark = pytest.mark.anyio

BIG_REPLY = 20_000_000
TIMEOUT = 3.0


def _pool(h: ProxyHandlers, server: str) -> dict[str, Any]:
    pool: dict[str, Any] = h.runtime.gateway.snapshot()["servers"][server]["pool"]
    return pool


@pytest.mark.promise("P-REL-12")
@pytest.mark.promise("P-REL-1")
async def test_a_session_timed_out_mid_big_reply_is_recycled_and_the_next_call_succeeds(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("big", call_timeout=TIMEOUT)) as h:
        before = int(text(await call(h, "big", "pid")))
        # The 20 MB reply leaves the upstream just before the deadline and is still
        # being read when it passes.
        timed_out = await call(h, "big", "big", size=BIG_REPLY, delay=TIMEOUT - 0.1)
        assert code(timed_out) == "upstream_timeout"
        assert text(await call(h, "big", "add", a=1, b=2)) == "3"
        after = int(text(await call(h, "big", "pid")))
        assert after != before  # a fresh session, not the half-read one
        assert _pool(h, "big")["retired"] == 1
        assert h.runtime.status()["servers"][0]["restarts"] == 1
        assert await wait_gone_async(before)


async def _count(h: ProxyHandlers, principal: str, client: str) -> CallToolResult:
    return await h.call_tool(
        "call",
        {"server": "counter", "tool": "count", "arguments": {}},
        principal=principal,
        client=client,
    )


@pytest.mark.promise("P-REL-12")
async def test_upstream_sessions_past_the_per_principal_or_total_cap_are_refused_with_session_limit(
    tmp_path: Path,
) -> None:
    caps: dict[str, Any] = {"max_upstream_sessions": 3, "max_upstream_sessions_per_principal": 2}
    async with running(tmp_path, scriptable("counter"), share=False, **caps) as h:
        assert text(await _count(h, "alice", "a1")) == "1"
        assert text(await _count(h, "alice", "a2")) == "1"
        assert code(await _count(h, "alice", "a3")) == "session_limit"
        assert text(await _count(h, "bob", "b1")) == "1"  # another principal still fits
        assert code(await _count(h, "bob", "b2")) == "session_limit"  # but the total is full
        assert text(await _count(h, "alice", "a1")) == "2"  # existing sessions keep working
        assert h.runtime.status()["servers"][0]["breaker"]["state"] == "closed"


@pytest.mark.promise("P-REL-12")
async def test_an_abandoned_upstream_session_expires_after_the_idle_timeout(
    tmp_path: Path,
) -> None:
    limits: dict[str, Any] = {
        "max_upstream_sessions_per_principal": 1,
        "session_idle_timeout": 0.5,
        "relist_interval": 0.2,
    }
    async with running(tmp_path, scriptable("counter"), share=False, **limits) as h:
        assert text(await _count(h, "alice", "gone")) == "1"
        pid = int(
            text(
                await h.call_tool(
                    "call",
                    {"server": "counter", "tool": "pid", "arguments": {}},
                    principal="alice",
                    client="gone",
                )
            )
        )
        # The client never comes back: its session (and process) is expired by the sweep.
        await wait_until(lambda: _pool(h, "counter")["expired"] == 1)
        assert await wait_gone_async(pid)
        assert text(await _count(h, "alice", "next")) == "1"
