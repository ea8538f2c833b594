"""SIGTERM with calls held in flight: every answer reaches its client (P-REL-7).

An adversarial run (issue 24, item 3) held 4 calls when ``serve --http`` got
SIGTERM: the drain let all 4 finish ``ok`` inside the 10 s grace, yet every
client had already failed with ``ConnectError``: the SDK client lists tools
after a result (to check it against the tool's output schema) on a new
connection, and the drain had closed the listener. The end-to-end test holds
4 calls from 4 real SDK clients in a real ``serve --http`` process, releases
them well after the signal, inside the grace, and asserts every client got
its answer while a new session was refused. The in-process tests pin which
requests a drain still serves.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.types import CallToolResult
from mcp_types.version import LATEST_MODERN_VERSION
from starlette.types import Receive, Scope, Send

from cartograph.server.http._drain import Drain
from tests.helpers.events import InFlight
from tests.helpers.serving import ServeProcess, serve_http
from tests.http.slow_server import call, text, write_config
from tests.http.support import INIT_BODY, MCP_HEADERS, mcp_client

CLIENTS = 4
GRACE = 20.0
HELD = 9.0
"""Seconds the calls stay held after the signal: past the 7.5 s at which clients used to fail."""

pytestmark = [pytest.mark.anyio, pytest.mark.promise("P-REL-7")]


async def _new_session_refused(served: ServeProcess) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=served.base, timeout=10) as raw:
        return await raw.post("/mcp", json=INIT_BODY, headers=MCP_HEADERS)


async def _held_calls(served: ServeProcess, tmp_path: Path, mode: str) -> tuple[list[str], int]:
    """Each client's answer to a call held from before SIGTERM until :data:`HELD` after it,
    and the status a new session got meanwhile."""
    release = tmp_path / "release"
    answers: list[str] = []
    flights = [InFlight(tmp_path, f"in-flight-{n}") for n in range(CLIENTS)]

    async def one(flight: InFlight) -> None:
        async with mcp_client(served.mcp, mode=mode, read_timeout=60) as client:
            result: CallToolResult = await call(
                client, "announce", path=str(flight.path), seconds=600, until=str(release)
            )
            answers.append(text(result) if not result.is_error else f"error: {text(result)}")

    try:
        async with anyio.create_task_group() as group:
            for flight in flights:
                group.start_soon(one, flight)
            for flight in flights:
                await flight.wait_async()
            served.signal(signal.SIGTERM)
            await anyio.sleep(HELD)  # the point of the test: time passing while held
            refused = await _new_session_refused(served)
            release.write_text("go")
    finally:
        for flight in flights:
            flight.close()
    assert refused.json()["error"]["data"]["code"] == "shutting_down"
    return answers, refused.status_code


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_attack_sigterm_with_four_calls_held_answers_every_client_within_the_grace(
    tmp_path: Path, mode: str
) -> None:
    with serve_http(write_config(tmp_path, grace=GRACE)) as served:
        with anyio.fail_after(90):
            answers, new_session = await _held_calls(served, tmp_path, mode)
            code = await anyio.to_thread.run_sync(served.wait, 30.0)

    assert answers == ["slept"] * CLIENTS
    assert new_session == 503
    assert code == 0
    log = served.stderr.decode(errors="replace")
    assert re.search(rf"drain: {CLIENTS} in-flight request\(s\) answered", log), log[-2000:]


# --- which requests a drain still serves (in process) ----------------------------------


class HeldApp:
    """An ASGI app that answers 200 at once, or, for ``/hold``, once :attr:`release` is set."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.held = anyio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive()).get("more_body", False):
            pass
        if scope["path"] == "/hold":
            self.held.set()
            await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def _session(session: str) -> dict[str, str]:
    return {**MCP_HEADERS, "mcp-session-id": session}


def _modern(method: str, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {}, **extra}


async def _draining(app: HeldApp) -> tuple[Drain, httpx2.AsyncClient]:
    drain = Drain(app)
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(drain), base_url="http://t")
    return drain, client


async def test_while_draining_a_session_with_a_call_in_flight_stays_served_and_others_not() -> None:
    app = HeldApp()
    drain, client = await _draining(app)
    async with client, anyio.create_task_group() as group:
        group.start_soon(lambda: client.post("/hold", json={}, headers=_session("busy")))
        await app.held.wait()
        drain.begin()

        follow_up = await client.post("/mcp", json=_modern("tools/list"), headers=_session("busy"))
        stream = await client.get("/mcp", headers=_session("busy"))
        idle = await client.post("/mcp", json=_modern("tools/call"), headers=_session("idle"))
        opening = await client.post("/mcp", json=INIT_BODY, headers=MCP_HEADERS)
        health = await client.get("/health")
        app.release.set()

    assert (follow_up.status_code, stream.status_code) == (200, 200)
    assert [r.status_code for r in (idle, opening, health)] == [503, 503, 503]
    assert opening.json()["error"]["data"]["code"] == "shutting_down"
    assert (drain.counts.answered, drain.counts.follow_ups, drain.counts.refused) == (1, 1, 3)


async def test_while_draining_a_sessionless_request_is_served_only_when_it_starts_no_work() -> None:
    drain, client = await _draining(HeldApp())
    drain.begin()
    modern = {**MCP_HEADERS, "mcp-protocol-version": LATEST_MODERN_VERSION}

    async def status(body: Any) -> int:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return (await client.post("/mcp", content=data, headers=modern)).status_code

    async with client:
        served = [await status(_modern(m)) for m in ("tools/list", "ping", "prompts/list")]
        responses = [await status({"jsonrpc": "2.0", "id": 3, "result": {}})]
        notices = [await status({"jsonrpc": "2.0", "method": "notifications/cancelled"})]
        work = [await status(_modern(m)) for m in ("tools/call", "resources/read")]
        junk = [await status(b"not json"), await status([_modern("tools/list")])]
        huge = await status(_modern("tools/list", pad="x" * (2 * 1024 * 1024)))

    assert served + responses + notices == [200] * 5
    assert work + junk + [huge] == [503] * 5


async def test_a_session_answered_just_before_the_drain_keeps_its_follow_up() -> None:
    drain, client = await _draining(HeldApp())
    async with client:
        assert (await client.post("/mcp", json={}, headers=_session("s1"))).status_code == 200
        drain.begin()  # its tools/list is still on its way

        again = await client.post("/mcp", json=_modern("tools/list"), headers=_session("s1"))

    assert again.status_code == 200
