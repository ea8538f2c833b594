"""`cartograph serve` as a subprocess, driven by the SDK's real stdio client."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers.events import InFlight, wait_gone
from tests.server.stdio_serving import SERVE, serve_params, text, write_config


@pytest.mark.anyio
async def test_an_sdk_client_lists_discovers_calls_and_reads_status(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with anyio.fail_after(90):
        async with Client(serve_params(config)) as client:
            tools = await client.list_tools()
            assert [t.name for t in tools.tools] == ["discover", "status", "call"]
            found = await client.call_tool("discover", {"task": "add two integers", "k": 3})
            assert not found.is_error
            assert {"server": "calc", "tool": "add"}.items() <= found.structured_content["tools"][
                0
            ].items() or any(t["tool"] == "add" for t in found.structured_content["tools"])
            result = await client.call_tool(
                "call", {"server": "calc", "tool": "add", "arguments": {"a": 20, "b": 22}}
            )
            assert text(result) == "42"
            compact = (await client.call_tool("status", {})).structured_content
            assert compact["totals"]["servers"] == 2 and "servers" not in compact
            status = await client.call_tool("status", {"detail": True})
            names = [s["name"] for s in status.structured_content["servers"]]
            assert names == ["calc", "stuck"]


@pytest.mark.promise("P-STDIO-1")
def test_every_stdout_byte_is_json_rpc_even_with_debug_logging(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "call", "arguments": {"server": "calc", "tool": "echo",
                                          "arguments": {"text": "hello"}}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "call", "arguments": {"server": "calc", "tool": "crash", "arguments": {}}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "status"}},
    ]  # fmt: skip
    replies = []
    with subprocess.Popen(
        [sys.executable, *SERVE, "--config", str(config), "--debug"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        for request in requests:
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
            if "id" in request:
                line = process.stdout.readline()
                replies.append(json.loads(line))
        process.stdin.close()
        rest = process.stdout.read()
        stderr = process.stderr.read() if process.stderr else b""
        process.wait(timeout=30)
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert b"DEBUG" in stderr  # debug logging was on, and went to stderr


@pytest.mark.parametrize("how", ["sigterm", "stdin_eof"])
@pytest.mark.promise("P-REL-7")
def test_shutdown_ends_in_flight_calls_and_leaves_no_upstream_child(
    tmp_path: Path, how: str
) -> None:
    config = write_config(tmp_path, audit_log=str(tmp_path / "audit.jsonl"))
    with (
        InFlight(tmp_path) as in_flight,
        subprocess.Popen(
            [sys.executable, *SERVE, "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as process,
    ):
        try:
            upstream_pid = _start_a_call_that_never_ends(process, in_flight)
            if how == "sigterm":
                process.send_signal(signal.SIGTERM)
            else:
                assert process.stdin is not None
                process.stdin.close()
            reply = _read_reply(process)
            assert process.wait(timeout=30) == 0
        finally:
            process.kill()
    # Either way the proxy drains before the SDK session ends: the client, which may
    # still read stdout after closing stdin, gets a tool error naming the cause, not
    # the SDK's generic "Connection closed".
    assert reply["id"] == 3
    assert reply["result"]["isError"] is True
    assert reply["result"]["structuredContent"]["error"]["code"] == "shutting_down"
    assert wait_gone(upstream_pid)
    calls = [r for r in _audit_records(tmp_path) if r["proxy_tool"] == "call"]
    assert [(r["tool"], r["outcome"]) for r in calls] == [("announce", "shutting_down")]


def _start_a_call_that_never_ends(process: subprocess.Popen[bytes], in_flight: InFlight) -> int:
    """Handshake, then a call upstream that sleeps for an hour; return once it is in flight."""
    assert process.stdin is not None

    def send(message: dict[str, object]) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})  # fmt: skip
    assert _read_reply(process)["id"] == 1
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    announce = {"path": str(in_flight.path), "seconds": 3600}
    arguments = {"server": "stuck", "tool": "announce", "arguments": announce}
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "call", "arguments": arguments}})  # fmt: skip
    return in_flight.wait()


def _audit_records(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _read_reply(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, "serve closed stdout without replying"
    reply: dict[str, Any] = json.loads(line)
    return reply
