"""Every well-formed request with an id gets exactly one response (P-REL-11).

Issue 13: requests the SDK's parser refuses — arguments nested 200+ deep, a
batch, ``params`` as a list, no ``jsonrpc``, a lone surrogate escape — got no
response at all on stdio (the client hung) and a 400 with ``"id": null`` over
HTTP (the client could not tell which request failed). Each case now gets one
JSON-RPC error carrying its own id, on stdio (in process, through a real
``cartograph serve`` over pipes, and with stdin a regular file) and over HTTP
in both protocol eras.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from cartograph.server.jsonrpc_refusal import _refusals
from cartograph.server.stdio.guard import RefusingLines
from tests.http.support import INIT_BODY, MCP_HEADERS, assemble, http_client, serving
from tests.server.stdio_serving import SERVE, write_config
from tests.server.wire import wire

pytestmark = pytest.mark.promise("P-REL-11")

DEEP = "[" * 250 + "]" * 250
VERY_DEEP = "[" * 5000 + "]" * 5000
CALL = '"method":"tools/call","params":{"name":"status","arguments":{"a":%s}}'
# id -> (the raw line, the JSON-RPC error code it is owed)
CASES: dict[int, tuple[str, int]] = {
    101: ('{"jsonrpc":"2.0","id":101,%s}' % (CALL % DEEP), -32600),
    102: ('{"jsonrpc":"2.0","id":102,%s}' % (CALL % VERY_DEEP), -32600),
    103: ('[{"jsonrpc":"2.0","id":103,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]', -32600),
    104: ('{"jsonrpc":"2.0","id":104,"method":"tools/call","params":[1,2]}', -32602),
    105: ('{"id":105,"method":"ping"}', -32600),
    106: ('{"jsonrpc":"2.0","id":106,"method":"tools/call","params":'
          '{"name":"call","arguments":{"server":"\\ud800","tool":"x"}}}', -32700),
    107: ('{"jsonrpc":"2.0","id":107,"method":null}', -32600),
}  # fmt: skip


def _owed(replies: list[dict[str, Any]]) -> dict[int, list[int | str]]:
    """Error code (or "result") received per case id (a list, so a second reply would show)."""
    got: dict[int, list[int | str]] = {}
    for reply in replies:
        if reply.get("id") in CASES:
            outcome = reply["error"]["code"] if "error" in reply else "result"
            got.setdefault(reply["id"], []).append(outcome)
    return got


EXPECTED: dict[int, list[int | str]] = {rid: [code] for rid, (_, code) in CASES.items()}


@pytest.mark.anyio
async def test_each_unparseable_request_gets_one_error_with_its_id_on_stdio(
    tmp_path: Path,
) -> None:
    replies: list[dict[str, Any]] = []
    async with wire(tmp_path) as connected:
        for line, _ in CASES.values():
            replies += [json.loads(raw) for raw in await connected.exchange(line)]
    assert _owed(replies) == EXPECTED
    assert all(r.get("id") in CASES for r in replies)  # nothing else, e.g. no id:null reply


class _CountingAdapter:
    """The SDK's JSON-RPC message adapter, counting the lines it parses."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.parsed: list[str] = []

    def validate_json(self, line: str, **options: Any) -> Any:
        self.parsed.append(line)
        return self.real.validate_json(line, **options)


@pytest.mark.anyio
async def test_each_line_on_our_stdio_wire_is_parsed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The guard parses every line to answer what the SDK cannot; the server
    # must then get its parse, not the line to parse again.
    import mcp_types

    counting = _CountingAdapter(mcp_types.jsonrpc_message_adapter)
    monkeypatch.setattr(mcp_types, "jsonrpc_message_adapter", counting)
    async with wire(tmp_path) as connected:
        counting.parsed.clear()
        call: dict[str, Any] = {"jsonrpc": "2.0", "id": "c1", "method": "tools/call"}
        call["params"] = {"name": "status", "arguments": {}}
        await connected.exchange(json.dumps(call))
    ping = [line for line in counting.parsed if '"ping"' in line]
    calls = [line for line in counting.parsed if '"c1"' in line]
    assert len(ping) == 1 and len(calls) == 1, counting.parsed


def _serve(config: Path, stdin: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *SERVE, "--config", str(config)],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _lines(tmp_path: Path) -> bytes:
    init = {**INIT_BODY, "id": "init"}
    lines = [json.dumps(init), '{"jsonrpc":"2.0","method":"notifications/initialized"}']
    lines += [line for line, _ in CASES.values()]
    # `status` waits (bounded) until the catalog is up: the refusals are then in its audit log
    lines.append('{"jsonrpc":"2.0","id":"ready","method":"tools/call","params":{"name":"status"}}')
    lines.append('{"jsonrpc":"2.0","id":"last","method":"ping"}')
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.promise("P-AUDIT-1")
def test_cartograph_serve_over_pipes_answers_each_unparseable_request(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    with _serve(write_config(tmp_path, audit_log=str(audit)), subprocess.PIPE) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(_lines(tmp_path))
        process.stdin.flush()
        replies: list[dict[str, Any]] = []
        while not {"ready", "last"} <= {r.get("id") for r in replies}:  # both always answer
            replies.append(json.loads(process.stdout.readline()))
        process.stdin.close()  # end of input: what is still owed goes out before exit
        rest = process.stdout.read()
        process.wait(timeout=30)
    replies += [json.loads(line) for line in rest.splitlines()]
    assert _owed(replies) == EXPECTED
    # each refusal is audited once, those made before the catalog was up included
    records = [json.loads(line) for line in audit.read_text("utf-8").splitlines()]
    refused = sorted(r["outcome"] for r in records if r["proxy_tool"] == "jsonrpc")
    assert refused == sorted(
        {-32700: "parse_error", -32600: "invalid_request", -32602: "invalid_params"}[code]
        for _, code in CASES.values()
    )


def test_cartograph_serve_with_stdin_a_regular_file_answers_them_too(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(_lines(tmp_path))
    with requests.open("rb") as stdin, _serve(write_config(tmp_path), stdin) as process:
        out, _ = process.communicate(timeout=60)
    replies = [json.loads(line) for line in out.splitlines()]
    assert _owed(replies) == EXPECTED
    assert "last" in [r["id"] for r in replies]


async def _lines_then_eof(*lines: str) -> Any:
    for line in lines:
        yield line + "\n"


class _Writes:
    async def send(self, item: SessionMessage) -> None:
        return None


async def _eof_reached(guard: RefusingLines, within: float) -> bool:
    """Whether the guard hands on end of input within ``within`` seconds."""
    with anyio.move_on_after(within):
        with pytest.raises(StopAsyncIteration):
            await guard.__anext__()
        return True
    return False


@pytest.mark.anyio
async def test_end_of_input_waits_until_each_request_read_is_answered() -> None:
    # A ping read just before EOF was dispatched by the SDK but cancelled before it
    # ran: no reply at all (seen on a loaded CI machine with stdin a regular file).
    ping = '{"jsonrpc":"2.0","id":"last","method":"ping"}'
    guard = RefusingLines(_lines_then_eof(ping))
    async with anyio.create_task_group() as group:
        group.start_soon(guard.answer, _Writes())
        assert await guard.__anext__() == ping + "\n"
        assert not await _eof_reached(guard, within=0.3)  # the ping is still owed
        guard.owed.written(types.JSONRPCResponse(jsonrpc="2.0", id="last", result={}))
        assert await _eof_reached(guard, within=1.0)


@pytest.mark.anyio
async def test_a_request_its_client_cancelled_is_not_waited_for() -> None:
    call = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"status"}}'
    cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}'
    guard = RefusingLines(_lines_then_eof(call, cancel))
    async with anyio.create_task_group() as group:
        group.start_soon(guard.answer, _Writes())
        assert [await guard.__anext__(), await guard.__anext__()] == [call + "\n", cancel + "\n"]
        assert await _eof_reached(guard, within=1.0)


MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _modern(line: str) -> tuple[str, dict[str, str]]:
    """The line with the ``_meta`` and the headers a 2026-07-28 sessionless POST carries."""
    meta = '"_meta":' + json.dumps(MODERN_META)
    body = line.replace('"params":{', '"params":{' + meta + ",", 1)
    headers = {"mcp-protocol-version": MODERN}
    if '"method":"tools/call"' in line:
        name = re.search(r'"name":"(\w+)"', line)
        headers |= {"mcp-method": "tools/call", "mcp-name": name.group(1) if name else ""}
    elif '"method":"ping"' in line:
        headers["mcp-method"] = "ping"
    return body, headers


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_each_unparseable_request_gets_one_error_with_its_id_over_http(era: str) -> None:
    built = assemble(("solo",))
    replies: list[dict[str, Any]] = []
    with serving(built.app) as base, http_client(base) as http:
        session: dict[str, str] = {}
        if era == "legacy":
            opened = http.post("/mcp", json=INIT_BODY, headers=MCP_HEADERS)
            session["mcp-session-id"] = opened.headers["mcp-session-id"]
            session["mcp-protocol-version"] = "2025-11-25"
        for line, _ in CASES.values():
            body, extra = (line, session) if era == "legacy" else _modern(line)
            headers = {**MCP_HEADERS, **extra}
            response = http.post("/mcp", content=body.encode(), headers=headers)
            parsed = response.json()
            replies += parsed if isinstance(parsed, list) else [parsed]
    # the 2026-07-28 path parses with Python's json (250 levels, lone surrogates) and runs
    # those calls: one response each all the same
    processed: dict[int, list[int | str]] = (
        {101: ["result"], 106: ["result"]} if era == "modern" else {}
    )
    assert _owed(replies) == {**EXPECTED, **processed}
    assert built.per_catalog["solo"].calls == len(processed)


JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
).map(json.dumps)
REQUESTISH = st.fixed_dictionaries(
    {"id": st.integers() | st.text(max_size=4) | st.none(), "method": st.text(max_size=8)},
    optional={"jsonrpc": st.sampled_from(["2.0", "1.0"]), "params": st.lists(st.integers())},
).map(json.dumps)


@settings(max_examples=300, deadline=None)
@given(line=st.text(max_size=80) | JSON_TEXT | REQUESTISH | REQUESTISH.map(lambda s: s[:-3]))
def test_recovering_ids_never_raises_on_arbitrary_text(line: str) -> None:
    for refusal in _refusals(line):  # the inner function: no catch-all to hide a bug
        assert isinstance(refusal.id, str | int) and not isinstance(refusal.id, bool)
        json.dumps(refusal.message_dict(), ensure_ascii=False).encode("utf-8")
