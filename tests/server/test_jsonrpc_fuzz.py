"""The JSON-RPC surface under arbitrary input (P-REL-8).

Raw lines go through the same stdio transport and proxy server ``cartograph
serve`` runs, against a real upstream. Whatever arrives, every line that
comes back is a JSON-RPC message, every error is a documented one (a JSON-RPC
protocol code, or a tool result carrying one of the proxy's error codes), and
the proxy still answers a ``ping`` afterwards. ``jsonrpc_corpus/`` holds
inputs that probe the parser's and the dispatcher's edges; each runs as a
regression test.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectSendStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cartograph.error_codes import REGISTRY
from cartograph.server.proxy import build_proxy_server
from cartograph.server.stdio.guard import guarded_stdio
from tests.helpers.support import scriptable
from tests.server.support import running
from tests.server.test_surface import JSON

pytestmark = pytest.mark.promise("P-REL-8")

CORPUS = Path(__file__).parent / "jsonrpc_corpus"
# Parse error, invalid request, method not found, invalid params (JSON-RPC 2.0 §5.1).
PROTOCOL_CODES = {-32700, -32600, -32601, -32602}
INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"},
    },
}


class _Out:
    """stdout double: collects each JSON-RPC line the server writes.

    The stdio framing is ``\n`` alone. A reply may carry U+0085, U+2028 or
    other characters ``str.splitlines`` would also break on (JSON leaves them
    unescaped, e.g. an echoed request id), and a write need not end a line.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.changed = anyio.Event()
        self._partial = ""

    async def write(self, text: str) -> None:
        *complete, self._partial = (self._partial + text).split("\n")
        self.lines.extend(line for line in complete if line)
        self.changed.set()
        self.changed = anyio.Event()

    async def flush(self) -> None:
        return None


class Wire:
    """One proxy served over an in-memory stdio pair; ``exchange`` sends a line and a ping."""

    def __init__(self, send: MemoryObjectSendStream[str], out: _Out) -> None:
        self._send = send
        self._out = out
        self._probes = 0

    async def _reply_to(self, request_id: str) -> dict[str, Any]:
        with anyio.fail_after(10):
            while True:
                for line in self._out.lines:
                    message = json.loads(line)
                    if isinstance(message, dict) and message.get("id") == request_id:
                        return message
                await self._out.changed.wait()

    async def exchange(self, line: str) -> list[str]:
        """Send ``line``; return what came back before the proxy answered the next ping."""
        self._probes += 1
        probe = f"probe-{self._probes}"
        self._out.lines.clear()
        await self._send.send(line.replace("\n", " ").replace("\r", " ") + "\n")
        await self._send.send(json.dumps({"jsonrpc": "2.0", "id": probe, "method": "ping"}) + "\n")
        reply = await self._reply_to(probe)
        assert reply.get("result") == {}, reply  # still serving
        return [raw for raw in self._out.lines if json.loads(raw).get("id") != probe]


@asynccontextmanager
async def wire(tmp_path: Path) -> AsyncIterator[Wire]:
    async with running(tmp_path, scriptable("calc")) as handlers:
        server = build_proxy_server(handlers)
        send, receive = anyio.create_memory_object_stream[str](16)
        out = _Out()
        stdio = guarded_stdio((receive, out))  # what `cartograph serve` runs on stdio
        # Both ends close however the body ends: a send end left open when a test
        # fails is collected later, as a ResourceWarning inside some other test.
        async with send, receive, anyio.create_task_group() as group, stdio as (reads, writes):
            options = server.create_initialization_options()
            group.start_soon(server.run, reads, writes, options)
            connected = Wire(send, out)
            try:
                await send.send(json.dumps(INIT) + "\n")
                await connected._reply_to("init")
                await send.send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
                yield connected
            finally:
                send.close()  # end of stdin: the server's reader stops
                group.cancel_scope.cancel()


def assert_documented(replies: list[str]) -> None:
    for raw in replies:
        message = json.loads(raw)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", raw
        if "error" in message:
            assert message["error"]["code"] in PROTOCOL_CODES, raw
        result = message.get("result")
        if isinstance(result, dict) and result.get("isError"):
            error = (result.get("structuredContent") or {}).get("error", {})
            assert error.get("code") in REGISTRY, raw


@pytest.mark.anyio
async def test_seed_corpus_yields_only_documented_errors_and_the_proxy_keeps_serving(
    tmp_path: Path,
) -> None:
    seeds = sorted(CORPUS.iterdir())
    assert len(seeds) >= 20
    async with wire(tmp_path) as connected:  # one proxy for all: each seed must leave it serving
        for seed in seeds:
            for line in seed.read_text(encoding="utf-8").removesuffix("\n").split("\n"):
                try:
                    assert_documented(await connected.exchange(line))
                except (AssertionError, TimeoutError) as exc:
                    raise AssertionError(f"seed {seed.name}: {exc}") from exc


METHODS = st.sampled_from(
    ["tools/call", "tools/list", "ping", "initialize", "resources/list", "prompts/get", "x/y"]
)
TOOL_CALLS = st.fixed_dictionaries(
    {"name": st.sampled_from(["call", "discover", "status", "nope"]), "arguments": JSON}
)
MESSAGES = st.fixed_dictionaries(
    {
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]),
        "id": st.integers() | st.text(max_size=8) | st.none(),
        "method": METHODS,
        "params": TOOL_CALLS | JSON,
    }
)
LINES = MESSAGES.map(json.dumps) | JSON.map(json.dumps) | st.text(max_size=60)


def test_arbitrary_json_rpc_lines_yield_only_documented_errors(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with wire(tmp_path) as connected:

            @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
            @given(line=LINES)
            def fuzz(line: str) -> None:
                assert_documented(anyio.from_thread.run(connected.exchange, line))

            await anyio.to_thread.run_sync(fuzz)

    anyio.run(scenario)
