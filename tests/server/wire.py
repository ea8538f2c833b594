"""The proxy on an in-memory stdio wire, as `cartograph serve` runs it (JSON-RPC tests)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from cartograph.server.proxy import build_proxy_server
from cartograph.server.stdio.guard import guarded_stdio
from tests.helpers.support import scriptable
from tests.server.support import running

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
