"""SIGTERM to ``serve --http`` mid-call: a result or ``shutting_down``, never a reset (P-REL-7).

Before the fix uvicorn handled the signal itself: a handshake-era client's
in-flight call ended with "SSE stream ended without a response", and the
re-raised signal killed the process before any upstream session was closed.
Each test drives the real proxy process with the SDK's streamable-HTTP client
against a real slow upstream (``tests/helpers/scriptable.py``).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.types import CallToolResult

from tests.helpers.events import InFlight, wait_gone_async
from tests.helpers.serving import ServeProcess, serve_http
from tests.http.slow_server import call, text, write_config
from tests.http.support import mcp_client

CLIENT_MODES = ["legacy", "auto"]
"""Handshake-era sessions (with their event stream) and the default 2026-07-28 exchange."""


def error_code(result: CallToolResult) -> str | None:
    if not result.is_error or result.structured_content is None:
        return None
    return str(result.structured_content["error"]["code"])


async def exits_leaving_no_child(served: ServeProcess, upstream_pid: int) -> int:
    code = await anyio.to_thread.run_sync(served.wait, 30.0)
    assert await wait_gone_async(upstream_pid)
    return code


@pytest.mark.anyio
@pytest.mark.parametrize("mode", CLIENT_MODES)
@pytest.mark.promise("P-REL-7")
async def test_sigterm_mid_call_lets_the_call_finish_within_the_grace(
    tmp_path: Path, mode: str
) -> None:
    """The call is released only once the drain has begun (new requests get 503), so the
    signal certainly came while it was in flight, however the machine schedules it."""
    in_flight, release = InFlight(tmp_path), tmp_path / "release"
    with in_flight, serve_http(write_config(tmp_path, grace=30.0)) as served:
        with anyio.fail_after(60):
            async with (
                mcp_client(served.mcp, mode=mode) as client,
                httpx2.AsyncClient(base_url=served.base, timeout=10) as raw,
            ):
                upstream_pid = int(text(await call(client, "pid")))
                assert (await raw.get("/health")).status_code == 200  # a kept-alive connection
                results: list[CallToolResult] = []

                async def slow_call() -> None:
                    path, until = str(in_flight.path), str(release)
                    results.append(
                        await call(client, "announce", path=path, seconds=600, until=until)
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(slow_call)
                    await in_flight.wait_async()
                    served.signal(signal.SIGTERM)
                    assert (await _refused_while_draining(raw)).status_code == 503
                    assert results == []
                    release.write_text("go")
            code = await exits_leaving_no_child(served, upstream_pid)
    assert [text(r) for r in results] == ["slept"]
    assert code == 0


@pytest.mark.anyio
@pytest.mark.parametrize("mode", CLIENT_MODES)
@pytest.mark.promise("P-REL-7")
async def test_sigterm_mid_call_past_the_grace_answers_shutting_down(
    tmp_path: Path, mode: str
) -> None:
    in_flight = InFlight(tmp_path)
    with in_flight, serve_http(write_config(tmp_path, grace=0.5)) as served:
        with anyio.fail_after(60):
            async with mcp_client(served.mcp, mode=mode) as client:
                upstream_pid = int(text(await call(client, "pid")))
                results: list[CallToolResult] = []

                async def stuck_call() -> None:
                    results.append(
                        await call(client, "announce", path=str(in_flight.path), seconds=600)
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(stuck_call)
                    await in_flight.wait_async()
                    served.signal(signal.SIGTERM)
            code = await exits_leaving_no_child(served, upstream_pid)
    assert [error_code(r) for r in results] == ["shutting_down"]
    assert code == 0


@pytest.mark.anyio
@pytest.mark.promise("P-REL-7")
async def test_while_draining_new_requests_are_refused_and_a_second_signal_ends_the_calls(
    tmp_path: Path,
) -> None:
    in_flight = InFlight(tmp_path)
    with in_flight, serve_http(write_config(tmp_path, grace=600.0)) as served:
        with anyio.fail_after(60):
            async with (
                mcp_client(served.mcp, mode="legacy") as client,
                httpx2.AsyncClient(base_url=served.base, timeout=10) as raw,
            ):
                upstream_pid = int(text(await call(client, "pid")))
                assert (await raw.get("/health")).status_code == 200  # a kept-alive connection
                results: list[CallToolResult] = []

                async def stuck_call() -> None:
                    results.append(
                        await call(client, "announce", path=str(in_flight.path), seconds=600)
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(stuck_call)
                    await in_flight.wait_async()
                    served.signal(signal.SIGTERM)
                    refused = await _refused_while_draining(raw)
                    assert refused.status_code == 503
                    assert refused.json()["error"]["data"]["code"] == "shutting_down"
                    served.signal(signal.SIGTERM)  # no waiting out the 600 s grace
            code = await exits_leaving_no_child(served, upstream_pid)
    assert [error_code(r) for r in results] == ["shutting_down"]
    assert code == 0
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    calls = [(r["tool"], r["outcome"]) for r in records if r.get("tool") in ("pid", "announce")]
    assert calls == [("pid", "ok"), ("announce", "shutting_down")]
    assert [r["outcome"] for r in records if r.get("http_status") == 503] == ["shutting_down"]


async def _refused_while_draining(raw: httpx2.AsyncClient) -> httpx2.Response:
    """A request on the already-open connection once the drain has begun (bounded)."""
    with anyio.fail_after(10):
        while True:
            response = await raw.get("/health")
            if response.status_code != 200:
                return response
            await anyio.sleep(0.02)
