"""Fault and load: does the proxy hold under abuse? (issue 13; P-REL-1..7, P-REL-10)

Two parts, both against real ``cartograph serve`` processes and real upstream
MCP servers (``tests/helpers/scriptable.py``), driven by the SDK's client:

**Load.** N clients x M ``call``s over streamable HTTP, first alone (the
baseline), then while one more client sends ~4 MB ``discover`` tasks back to
back. The heavy requests must be refused fast (``task_too_long``) or run off
the event loop; the others must see 0 errors and a p99 within 2x of the
baseline. The heavy sender posts a body encoded once, from a worker thread, so
its JSON encoding does not stall the measuring clients' own event loop.

**Faults.** One row per injected fault — hang, crash mid-call, malformed reply,
oversized reply, notification flood, slow start, SIGKILL of an upstream,
SIGTERM of the proxy mid-call (stdio and HTTP), rug pull in both protocol
eras — with the error the promise expects, what was observed, how many calls
got no answer at all ("lost"), and audit records per call (from the proxy's
audit log).

    .venv/bin/python benchmarks/fault_load.py [--clients 50] [--calls 200] [--json]
    .venv/bin/python benchmarks/fault_load.py --short   # the CI form (5 x 20; a test runs it)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.serving import SERVE, alive, serve_http  # noqa: E402
from tests.helpers.support import SCRIPTABLE  # noqa: E402

HEAVY_TASK_CHARS = 4_000_000
"""The attack's discover task (~4 MB; under the default 4 MiB body limit with its envelope)."""
MODERN = "2026-07-28"
RUG_PULL_WINDOW = 60.0
"""How long after a mid-session tool change the script keeps checking whether calls see it.

A bound for failing, not a speed target: the row's note reports how long the
refusal took (seconds on an idle machine). It is wide because the CI machine
is a loaded 2-core one, where a re-list every :data:`RELIST_INTERVAL` can lag
by many seconds without the promise being broken."""
RELIST_INTERVAL = 2.0
WITHIN_GRACE = 30.0
"""``shutdown_grace`` of the "within grace" SIGTERM rows, whose call needs 1 s upstream: a
drain ends as soon as its calls do, so a wide grace costs nothing and keeps a loaded
machine's slow answer inside it."""


# -- config -------------------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    """One scriptable upstream as the proxy's config names it."""

    name: str
    args: tuple[str, ...] = ()
    call_timeout: float = 10.0
    protocol: str = "legacy"
    stateless: bool = False


def write_config(
    folder: Path,
    upstreams: list[Upstream],
    *,
    embedder: str = "fake",
    gateway: dict[str, Any] | None = None,
    http: dict[str, Any] | None = None,
    index: dict[str, Any] | None = None,
) -> Path:
    """A cartograph.toml for ``upstreams`` with an audit log at ``folder/audit.jsonl``."""
    gateway = {"audit_log": str(folder / "audit.jsonl"), **(gateway or {})}
    lines = [f"state_dir = {_toml(str(folder / 'state'))}", "", "[index]"]
    lines.append(f"embedder = {_toml(embedder)}")
    lines += [f"{key} = {_toml(value)}" for key, value in (index or {}).items()]
    lines += ["", "[gateway]"]
    lines += [f"{key} = {_toml(value)}" for key, value in gateway.items()]
    if http:
        lines += ["", "[http]", *(f"{key} = {_toml(value)}" for key, value in http.items())]
    for up in upstreams:
        lines += ["", f"[servers.{up.name}]", f"command = {_toml(sys.executable)}"]
        lines.append(f"args = [{', '.join(_toml(a) for a in (str(SCRIPTABLE), *up.args))}]")
        lines.append(f"call_timeout = {up.call_timeout}")
        lines.append(f"protocol = {_toml(up.protocol)}")
        lines.append(f"stateless = {_toml(up.stateless)}")
    path = folder / "cartograph.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def audit_records(folder: Path) -> list[dict[str, Any]]:
    path = folder / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# -- clients ------------------------------------------------------------------


@contextlib.asynccontextmanager
async def mcp_client(url: str, mode: str = "auto") -> AsyncIterator[Client]:
    async with create_mcp_http_client() as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=60) as client:
            yield client


async def call(client: Client, server: str, tool: str, **arguments: Any) -> CallToolResult:
    return await client.call_tool("call", {"server": server, "tool": tool, "arguments": arguments})


def text(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def code(result: CallToolResult) -> str | None:
    if not result.is_error:
        return None
    error = (result.structured_content or {}).get("error") or {}
    return str(error.get("code", "tool_error"))


def outcome(result: CallToolResult) -> str:
    """``ok``, ``ok (truncated)`` or the error code, as the table shows it."""
    failed = code(result)
    if failed is not None:
        return failed
    if (result.meta or {}).get("cartograph/truncated"):
        return "ok (truncated)"
    return "ok"


# -- load ---------------------------------------------------------------------


@dataclass
class LoadRun:
    label: str
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    heavy_sent: int = 0
    heavy_codes: dict[str, int] = field(default_factory=dict)
    heavy_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies_ms)
        out: dict[str, Any] = {
            "run": self.label,
            "calls": self.calls,
            "errors": len(self.errors),
            "p50_ms": _pct(ordered, 0.50),
            "p99_ms": _pct(ordered, 0.99),
            "max_ms": round(ordered[-1], 1) if ordered else None,
            "wall_s": round(self.wall_s, 1),
        }
        if self.heavy_sent:
            out["heavy_sent"] = self.heavy_sent
            out["heavy_codes"] = self.heavy_codes
            out["heavy_p50_ms"] = _pct(sorted(self.heavy_ms), 0.50)
        if self.errors:
            out["error_kinds"] = sorted(set(self.errors))
        return out


def _pct(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


async def load_run(url: str, clients: int, calls: int, *, heavy: bool, label: str) -> LoadRun:
    """``clients`` SDK clients x ``calls`` each, all connected before the first call."""
    run = LoadRun(label)
    connected = 0
    everyone_in = anyio.Event()
    go = anyio.Event()
    stop_heavy = threading.Event()

    async def one(index: int) -> None:
        nonlocal connected
        async with mcp_client(url) as client:
            connected += 1
            if connected == clients:
                everyone_in.set()
            await go.wait()
            for i in range(calls):
                started = time.perf_counter()
                run.calls += 1
                try:
                    result = await call(client, "calc", "add", a=index, b=i)
                except Exception as exc:  # a transport error is what this measures
                    run.errors.append(type(exc).__name__)
                    continue
                run.latencies_ms.append((time.perf_counter() - started) * 1000.0)
                if result.is_error or text(result) != str(index + i):
                    run.errors.append(code(result) or "wrong_result")

    with anyio.fail_after(600):
        async with anyio.create_task_group() as outer:
            async with anyio.create_task_group() as group:
                for index in range(clients):
                    group.start_soon(one, index)
                await everyone_in.wait()
                if heavy:
                    outer.start_soon(_heavy_sender, url, run, stop_heavy)
                started = time.perf_counter()
                go.set()
            run.wall_s = time.perf_counter() - started
            stop_heavy.set()
    return run


async def _heavy_sender(url: str, run: LoadRun, stop: threading.Event) -> None:
    headers, body = heavy_discover_request()
    await anyio.to_thread.run_sync(_post_until, url, headers, body, run, stop)


def heavy_discover_request(chars: int = HEAVY_TASK_CHARS) -> tuple[dict[str, str], bytes]:
    """A self-contained 2026-07-28 ``tools/call`` of ``discover`` with a ``chars``-long task."""
    task = ("find the tool that adds two integers and then echo the text " * (chars // 60 + 1))[
        :chars
    ]
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "discover", "arguments": {"task": task, "k": 5}, "_meta": meta},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "discover",
    }
    return headers, json.dumps(body).encode()


def _post_until(
    url: str, headers: dict[str, str], body: bytes, run: LoadRun, stop: threading.Event
) -> None:
    with httpx2.Client(timeout=120) as http:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                response = http.post(url, content=body, headers=headers)
                result = _rpc_result(response)
            except (httpx2.HTTPError, ValueError) as exc:
                result_code = f"transport:{type(exc).__name__}"
            else:
                result_code = result
            run.heavy_ms.append((time.perf_counter() - started) * 1000.0)
            run.heavy_sent += 1
            run.heavy_codes[result_code] = run.heavy_codes.get(result_code, 0) + 1


def _rpc_result(response: httpx2.Response) -> str:
    """The outcome of one JSON or SSE JSON-RPC response: ``ok``, the tool error code, or HTTP."""
    if response.status_code != 200:
        return f"http_{response.status_code}"
    payload = response.text
    if "text/event-stream" in response.headers.get("content-type", ""):
        data = [line[5:].strip() for line in payload.splitlines() if line.startswith("data:")]
        payload = next((d for d in data if '"result"' in d or '"error"' in d), "{}")
    message = json.loads(payload)
    if "error" in message:
        return f"jsonrpc:{message['error'].get('code')}"
    result = message.get("result") or {}
    if result.get("isError"):
        return str(((result.get("structuredContent") or {}).get("error") or {}).get("code"))
    return "ok"


ALLOWED_TASK_CHARS = 5_000_000
"""``--allowed``: a limit above the attack's task, so the 4 MB discover runs (off the loop)."""


def run_load(folder: Path, clients: int, calls: int, *, allowed: bool = False) -> dict[str, Any]:
    """Baseline, then the same load with the heavy sender, against one proxy.

    With ``allowed``, a second proxy whose ``max_task_chars`` admits the 4 MB
    task runs the loaded case again: the discovers then rank in a worker thread.
    """
    runs, offered, call_records, discover_records = _load_on_proxy(
        _sub(folder, "refused"), clients, calls, baseline=True, label="+4 MB (refused)"
    )
    if allowed:
        more = _load_on_proxy(
            _sub(folder, "allowed"),
            clients,
            calls,
            baseline=False,
            label="+4 MB (allowed, off-loop)",
            index={"max_task_chars": ALLOWED_TASK_CHARS},
        )
        runs += more[0]
        offered, call_records = offered + more[1], call_records + more[2]
        discover_records += more[3]
    summaries = [r.summary() for r in runs]
    base = summaries[0]
    for figures in summaries[1:]:
        if base["p99_ms"] and figures["p99_ms"]:
            figures["p99_vs_baseline"] = round(figures["p99_ms"] / base["p99_ms"], 2)
    heavy_sent = sum(r.heavy_sent for r in runs)
    return {
        "clients": clients,
        "calls_per_client": calls,
        "runs": summaries,
        "p99_ratio": summaries[1].get("p99_vs_baseline"),
        "audit_per_call": round(call_records / offered, 3) if offered else None,
        "audit_per_heavy_discover": round(discover_records / heavy_sent, 3) if heavy_sent else None,
    }


def _load_on_proxy(
    folder: Path,
    clients: int,
    calls: int,
    *,
    baseline: bool,
    label: str,
    index: dict[str, Any] | None = None,
) -> tuple[list[LoadRun], int, int, int]:
    """Runs, calls offered, and the audit records of `call`s and `discover`s on one proxy."""
    upstream = Upstream("calc", stateless=True)
    # The bulkhead bounds one upstream's concurrency; the load offers `clients` at once.
    gateway = {"max_in_flight": max(8, clients), "queue_size": max(32, clients)}
    config = write_config(folder, [upstream], embedder="minilm", gateway=gateway, index=index)
    runs: list[LoadRun] = []
    warm = min(clients, 4)
    with serve_http(config) as served:

        async def drive() -> None:
            await load_run(served.mcp, warm, 5, heavy=False, label="warm-up")
            if baseline:
                runs.append(
                    await load_run(served.mcp, clients, calls, heavy=False, label="baseline")
                )
            runs.append(await load_run(served.mcp, clients, calls, heavy=True, label=label))

        anyio.run(drive)
        served.signal(signal.SIGTERM)
        served.wait(60)
    records = audit_records(folder)
    call_records = sum(1 for r in records if r.get("proxy_tool") == "call")
    discover_records = sum(1 for r in records if r.get("proxy_tool") == "discover")
    return runs, sum(r.calls for r in runs) + warm * 5, call_records, discover_records


# -- faults -------------------------------------------------------------------


@dataclass
class Row:
    fault: str
    expected: str
    observed: str = ""
    calls: int = 0
    answered: int = 0
    audit_records: int = 0
    server: str | None = None
    note: str = ""

    @property
    def lost(self) -> int:
        return self.calls - self.answered

    @property
    def audit_per_call(self) -> float | None:
        return round(self.audit_records / self.calls, 2) if self.calls else None

    @property
    def held(self) -> bool:
        return self.observed == self.expected and self.lost == 0 and self.audit_per_call == 1.0


class Probe:
    """Counts calls and answers for one row while it runs."""

    def __init__(self, client: Client, row: Row) -> None:
        self.client, self.row = client, row

    async def __call__(self, tool: str, **arguments: Any) -> CallToolResult | None:
        assert self.row.server is not None
        self.row.calls += 1
        try:
            result = await call(self.client, self.row.server, tool, **arguments)
        except Exception as exc:  # no answer: lost
            self.row.note = f"{type(exc).__name__}: {exc}"[:80]
            return None
        self.row.answered += 1
        return result


def _observed(*results: CallToolResult | None) -> str:
    return ", then ".join("no answer" if r is None else outcome(r) for r in results)


async def fault_hang(probe: Probe) -> str:
    return _observed(await probe("hang"), await probe("add", a=1, b=1))


async def fault_crash(probe: Probe) -> str:
    return _observed(await probe("crash"), await probe("add", a=1, b=1))


async def fault_malformed(probe: Probe) -> str:
    return _observed(
        await probe("malformed", mode="bad_result"),
        await probe("malformed", mode="garbage"),
        await probe("add", a=1, b=1),
    )


async def fault_oversized(probe: Probe) -> str:
    return _observed(await probe("big", size=5_000_000), await probe("add", a=1, b=1))


async def fault_flood(probe: Probe) -> str:
    return _observed(await probe("flood", n=1000), await probe("add", a=1, b=1))


async def fault_slow_start(probe: Probe) -> str:
    return _observed(await probe("add", a=2, b=2))


async def fault_sigkill(probe: Probe) -> str:
    first = await probe("pid")
    if first is None or first.is_error:
        return _observed(first)
    pid = int(text(first))
    os.kill(pid, signal.SIGKILL)
    with anyio.fail_after(10):
        while alive(pid):  # noqa: ASYNC110 - the upstream is another process
            await anyio.sleep(0.02)
    return _observed(await probe("add", a=1, b=1))


async def fault_rug_pull(probe: Probe) -> str:
    """Change ``echo`` mid-session (with list_changed), then see how long ``call`` serves it."""
    before = await probe("echo", text="hi")
    await probe("mutate")
    started = time.monotonic()
    after: CallToolResult | None = None
    while time.monotonic() - started < RUG_PULL_WINDOW:
        after = await probe("echo", text="hi")
        if after is None or after.is_error:
            break
        await anyio.sleep(0.25)
    if after is not None and after.is_error:
        probe.row.note = f"refused {time.monotonic() - started:.1f} s after the change"
    else:
        probe.row.note = f"still served {RUG_PULL_WINDOW:g} s after the change"
    return f"{_observed(before)}, then {_observed(after)}"


KNOWN_OPEN: dict[str, str] = {}
"""Rows whose promise is known not to hold yet, with why; the table still shows what it sees."""

FaultFn = Callable[[Probe], Awaitable[str]]
IN_PROCESS: list[tuple[Row, Upstream, FaultFn]] = [
    (
        Row("hang", "upstream_timeout, then ok"),
        Upstream("f_hang", call_timeout=2.0),
        fault_hang,
    ),
    (Row("crash mid-call", "upstream_closed, then ok"), Upstream("f_crash"), fault_crash),
    (
        Row("malformed reply", "upstream_protocol, then upstream_timeout, then ok"),
        Upstream("f_malformed", call_timeout=2.0),
        fault_malformed,
    ),
    (
        Row("oversized reply (5 MB)", "ok (truncated), then ok"),
        Upstream("f_big"),
        fault_oversized,
    ),
    (
        Row("notification flood (1,000)", "ok, then ok"),
        Upstream("f_flood"),
        fault_flood,
    ),
    (
        Row("slow start (3 s)", "ok"),
        Upstream("f_slow", args=("--start-delay", "3")),
        fault_slow_start,
    ),
    (Row("SIGKILL of an upstream", "ok"), Upstream("f_kill"), fault_sigkill),
    (
        Row("rug pull, handshake era", "ok, then tool_drifted"),
        Upstream("f_rug_legacy", protocol="legacy"),
        fault_rug_pull,
    ),
    (
        Row("rug pull, 2026-07-28 era", "ok, then tool_drifted"),
        Upstream("f_rug_modern", protocol="auto"),
        fault_rug_pull,
    ),
]


def run_in_process_faults(folder: Path) -> list[Row]:
    """Every upstream fault against one ``serve --http``, one upstream per fault."""
    plan = [(Row(**{**asdict(row)}), up, fn) for row, up, fn in IN_PROCESS]
    # A 2026-07-28 SDK upstream announces no list changes: the periodic re-list
    # ([gateway] relist_interval, default 30 s) is what catches its rug pull.
    gateway = {"relist_interval": RELIST_INTERVAL}
    config = write_config(folder, [up for _, up, _ in plan], gateway=gateway)
    with serve_http(config) as served:

        async def drive() -> None:
            async with mcp_client(served.mcp) as client:
                for row, upstream, fault in plan:
                    row.server = upstream.name
                    with anyio.fail_after(120):
                        row.observed = await fault(Probe(client, row))

        anyio.run(drive)
        served.signal(signal.SIGTERM)
        served.wait(60)
    records = audit_records(folder)
    for row, _, _ in plan:
        row.audit_records = sum(
            1 for r in records if r.get("server") == row.server and r.get("proxy_tool") == "call"
        )
    return [row for row, _, _ in plan]


def run_sigterm_http(folder: Path, *, grace: float, seconds: float, mode: str) -> Row:
    """SIGTERM ``serve --http`` while a call is in flight upstream."""
    expected = "ok" if seconds < grace else "shutting_down"
    label = "within" if seconds < grace else "past"
    row = Row(f"SIGTERM proxy mid-call, HTTP ({mode}, {label} grace)", expected, server="slow")
    marker = folder / "in-flight"
    config = write_config(
        folder, [Upstream("slow", call_timeout=60.0)], http={"shutdown_grace": grace}
    )
    with serve_http(config) as served:

        async def drive() -> None:
            async with mcp_client(served.mcp, mode=mode) as client:
                probe = Probe(client, row)
                pid_result = await probe("pid")
                pid = int(text(pid_result)) if pid_result is not None else -1
                results: list[CallToolResult | None] = []

                async def in_flight() -> None:
                    results.append(await probe("announce", path=str(marker), seconds=seconds))

                with anyio.fail_after(120):
                    async with anyio.create_task_group() as group:
                        group.start_soon(in_flight)
                        while not await anyio.Path(marker).exists():  # noqa: ASYNC110
                            await anyio.sleep(0.02)  # (the upstream process makes the file)
                        served.signal(signal.SIGTERM)
                exit_code = await anyio.to_thread.run_sync(served.wait, 60.0)
                row.observed = _observed(*results)
                row.note = _exit_note(exit_code, pid)

        anyio.run(drive)
    row.audit_records = _call_records(folder, "slow")
    return row


def run_sigterm_stdio(folder: Path) -> Row:
    """SIGTERM ``serve`` (stdio) while a call is in flight upstream: raw JSON-RPC lines."""
    row = Row("SIGTERM proxy mid-call, stdio", "shutting_down", server="slow")
    marker = folder / "in-flight"
    config = write_config(folder, [Upstream("slow", call_timeout=60.0)])
    command = [sys.executable, *SERVE, "--config", str(config)]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as process:
        try:
            pid, reply, exit_code = _drive_stdio_sigterm(process, marker, row)
        finally:
            if process.poll() is None:
                process.kill()
    row.observed = reply
    row.note = _exit_note(exit_code, pid)
    row.audit_records = _call_records(folder, "slow")
    return row


def _drive_stdio_sigterm(
    process: subprocess.Popen[bytes], marker: Path, row: Row
) -> tuple[int, str, int]:
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def send(message: dict[str, Any]) -> None:
        stdin.write((json.dumps(message) + "\n").encode())
        stdin.flush()

    def call_line(rid: int, tool: str, arguments: dict[str, Any]) -> None:
        row.calls += 1
        params = {
            "name": "call",
            "arguments": {"server": "slow", "tool": tool, "arguments": arguments},
        }
        send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "fault_load", "version": "0"}}})  # fmt: skip
    stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call_line(2, "pid", {})
    first = json.loads(stdout.readline())
    row.answered += 1
    pid = int(first["result"]["content"][0]["text"])
    call_line(3, "announce", {"path": str(marker), "seconds": 600})
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    line = stdout.readline()
    if not line:
        return pid, "no answer", process.wait(timeout=30)
    row.answered += 1
    result = json.loads(line).get("result") or {}
    observed = "ok"
    if result.get("isError"):
        observed = str(((result.get("structuredContent") or {}).get("error") or {}).get("code"))
    return pid, observed, process.wait(timeout=30)


def _exit_note(exit_code: int, upstream_pid: int) -> str:
    deadline = time.monotonic() + 10
    while upstream_pid > 0 and alive(upstream_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = (
        "upstream child left running"
        if upstream_pid > 0 and alive(upstream_pid)
        else "no child left"
    )
    return f"exit {exit_code}, {child}"


def _call_records(folder: Path, server: str) -> int:
    return sum(
        1
        for r in audit_records(folder)
        if r.get("server") == server and r.get("proxy_tool") == "call"
    )


def run_faults(folder: Path) -> list[Row]:
    rows = run_in_process_faults(_sub(folder, "faults"))
    rows.append(run_sigterm_stdio(_sub(folder, "sigterm-stdio")))
    for mode in ("legacy", "auto"):
        rows.append(
            run_sigterm_http(
                _sub(folder, f"sigterm-{mode}-in"), grace=WITHIN_GRACE, seconds=1.0, mode=mode
            )
        )
        rows.append(
            run_sigterm_http(
                _sub(folder, f"sigterm-{mode}-past"), grace=0.5, seconds=600, mode=mode
            )
        )
    return rows


def _sub(folder: Path, name: str) -> Path:
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    return path


# -- report -------------------------------------------------------------------


def fault_table(rows: list[Row]) -> str:
    header = ["fault", "expected", "observed", "lost", "audit/call", "held", "note"]
    body = [
        [
            r.fault,
            r.expected,
            r.observed,
            str(r.lost),
            f"{r.audit_per_call:g}" if r.audit_per_call is not None else "-",
            "yes" if r.held else ("NO (known)" if r.fault in KNOWN_OPEN else "NO"),
            r.note,
        ]
        for r in rows
    ]
    return _table(header, body)


def load_table(load: dict[str, Any]) -> str:
    header = ["run", "calls", "errors", "p50 ms", "p99 ms", "p99 / baseline", "max ms", "wall s"]
    header.append("4 MB discovers")
    body = []
    for run in load["runs"]:
        heavy = ""
        if run.get("heavy_sent"):
            codes = ", ".join(f"{k} x{v}" for k, v in run["heavy_codes"].items())
            heavy = f"{run['heavy_sent']} sent ({codes}), p50 {run['heavy_p50_ms']} ms"
        body.append(
            [
                run["run"],
                str(run["calls"]),
                str(run["errors"]),
                str(run["p50_ms"]),
                str(run["p99_ms"]),
                f"{run['p99_vs_baseline']}x" if "p99_vs_baseline" in run else "",
                str(run["max_ms"]),
                str(run["wall_s"]),
                heavy,
            ]
        )
    return _table(header, body)


def _table(header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in body
    ]
    return "\n".join(lines)


@contextlib.contextmanager
def workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="cartograph-fault-load-") as folder:
        yield Path(folder)


def run(
    clients: int,
    calls: int,
    *,
    faults: bool = True,
    allowed: bool = False,
    folder: Path | None = None,
) -> dict[str, Any]:
    """The whole benchmark; returns the figures the tables print."""
    with workdir(folder) as work:
        load = run_load(_sub(work, "load"), clients, calls, allowed=allowed)
        rows = run_faults(work) if faults else []
    return {
        "load": load,
        "faults": [{**asdict(r), "lost": r.lost, "held": r.held} for r in rows],
        "rows": rows,
    }


def main() -> None:
    # The SDK client logs a warning for every session it cannot DELETE after a SIGTERM row.
    logging.getLogger("mcp").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--short", action="store_true", help="the CI form: 5 clients x 20 calls")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument(
        "--allowed",
        action="store_true",
        help="also run the 4 MB discover admitted (max_task_chars raised), ranked off the loop",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep configs and audit logs in this folder")
    args = parser.parse_args()
    clients, calls = (5, 20) if args.short else (args.clients, args.calls)
    report = run(clients, calls, faults=not args.no_faults, allowed=args.allowed, folder=args.keep)
    rows: list[Row] = report.pop("rows")
    if args.json:
        print(json.dumps(report, indent=1))
        return
    load = report["load"]
    print(f"Load: {clients} clients x {calls} calls over HTTP (`call` to a stateless upstream)")
    print(load_table(load))
    print(
        f"p99 with the 4 MB sender refused / baseline: {load['p99_ratio']}x; "
        f"audit records per call: {load['audit_per_call']}; "
        f"per 4 MB discover: {load['audit_per_heavy_discover']}"
    )
    if rows:
        print()
        print("Faults")
        print(fault_table(rows))


if __name__ == "__main__":
    main()
