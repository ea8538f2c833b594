"""A fleet on 127.0.0.1: PostgreSQL, N ``cartograph serve --http`` replicas, HAProxy in front.

Shared by ``tests/fleet`` and ``benchmarks/fleet_load.py``. Everything is real:
Debian's PostgreSQL in a throwaway cluster (:mod:`tests.servers.postgres`),
operator cards made by the real CLI (``keys init`` + ``bootstrap``), replicas as
subprocesses reading one config, and Debian's HAProxy with the config
``docs/fleet.md`` shows for the chosen session mode:

* ``stateless``: round robin; every request self-contained (2026-07-28 era);
* ``sticky``: the balancer learns each ``Mcp-Session-Id`` from the response
  that created it and pins the session's later requests to that replica.

The load driver (:func:`drive`) runs SDK streamable-HTTP clients, each call
tagged with a unique W3C ``traceparent`` that the replicas write into the
audit record, so "exactly one audit record per answered call" is checked
call by call, not by totals.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2

from tests.servers.postgres import PASSWORD, PASSWORD_ENV, Postgres
from tests.servers.serving import free_port
from tests.servers.support import SCRIPTABLE

Mode = Literal["stateless", "sticky"]
MODERN = "2026-07-28"
READY_TIMEOUT = 120.0
SERVE = (sys.executable, "-m", "cartograph.cli.main", "serve", "--http")


BALANCER_ERRORS: dict[int, tuple[str, str]] = {
    502: (
        "replica_lost",
        "the replica answering this request closed its connection before it answered (it "
        "stopped or crashed); the request may have run there: retry it, after checking its "
        "effect if the tool is not idempotent",
    ),
    503: (
        "no_replica",
        "no replica is available: all are down or refusing connections; retry in a few seconds",
    ),
    504: (
        "replica_timeout",
        "the replica did not answer within the balancer timeout (timeout server); the call "
        "may still finish there: check its effect before repeating a tool that is not "
        "idempotent",
    ),
}
"""The balancer's own failures as JSON-RPC errors (``http-error``): the SDK surfaces a
JSON-RPC body with its message and ``data.code``, where HAProxy's HTML page became a bare
``MCPError`` "Server returned an error response" (docs/fleet.md, "The balancer's errors")."""
RETRY_AFTER = 2


def http_errors() -> list[str]:
    """The ``http-error`` lines for :data:`BALANCER_ERRORS` (HAProxy 2.2+)."""
    lines = []
    for status, (code, message) in BALANCER_ERRORS.items():
        assert "'" not in message  # HAProxy's single-quoted string has no escape for it
        data: dict[str, Any] = {"code": code}
        header = ""
        if status == 503:
            data["retry_after"] = RETRY_AFTER
            header = f" hdr Retry-After {RETRY_AFTER}"
        error = {"code": -32603, "message": message, "data": data}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}, separators=(",", ":"))
        lines.append(
            f"    http-error status {status} content-type application/json{header} string '{body}'"
        )
    return lines


def haproxy_config(mode: Mode, port: int, replicas: list[int]) -> str:
    """The balancer config for ``mode`` (the same text docs/fleet.md explains)."""
    lines = [
        "global",
        "    maxconn 4096",
        # One line per request on HAProxy's stdout (haproxy.log beside the replicas' logs):
        # status, server and termination state say who ended a failed request.
        "    log stdout format raw local0",
        "defaults",
        "    mode http",
        "    log global",
        "    option httplog",
        "    timeout connect 2s",
        "    timeout client 120s",
        "    timeout server 120s",
        # A check waits this long for /health (default: only the 500 ms interval, which a
        # saturated replica misses, and then every replica leaves the rotation: 503s).
        "    timeout check 5s",
        "    retries 3",
        "    option redispatch",
        *http_errors(),
        "frontend mcp",
        f"    bind 127.0.0.1:{port}",
        "    default_backend cartograph",
        *(
            # The log says which replica holds each session (its `initialize` line).
            ["    capture response header mcp-session-id len 64"] if mode == "sticky" else []
        ),
        "backend cartograph",
        "    balance roundrobin",
        # HTTP/1.1 with a Host header: the replicas refuse requests without one (P-HTTP-1).
        "    option httpchk",
        "    http-check send meth GET uri /health ver HTTP/1.1 hdr Host localhost",
        "    http-check expect status 200",
    ]
    if mode == "sticky":
        lines += [
            "    stick-table type string len 64 size 1m expire 30m",
            "    stick on req.hdr(mcp-session-id)",
            "    stick store-response res.hdr(mcp-session-id)",
        ]
    lines += [
        f"    server r{i} 127.0.0.1:{p} check inter 500ms fall 2 rise 2"
        for i, p in enumerate(replicas)
    ]
    return "\n".join(lines) + "\n"


def fleet_toml(state: Path, database_url: str, *, stateless: bool) -> str:
    """One config every replica reads: the scriptable upstream, PostgreSQL storage."""
    return "\n".join(
        [
            f'state_dir = "{state}"',
            "",
            "[index]",
            'embedder = "fake"',
            "",
            "[gateway]",
            "max_in_flight = 64",
            "queue_size = 512",
            "max_sessions = 2048",
            "max_sessions_per_principal = 2048",
            # Sticky mode: every MCP session holds its own upstream session (a process for
            # stdio); the defaults (64, 16 per principal, and the load runs unauthenticated)
            # would refuse the 17th concurrent client with session_limit.
            "max_upstream_sessions = 256",
            "max_upstream_sessions_per_principal = 256",
            "",
            "[http]",
            "shutdown_grace = 5.0",
            "",
            "[storage]",
            f'url = "{database_url}"',
            "",
            "[servers.calc]",
            f'command = "{sys.executable}"',
            f'args = ["{SCRIPTABLE}"]',
            'protocol = "legacy"',
            f"stateless = {'true' if stateless else 'false'}",
            "",
        ]
    )


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Fleet:
    """A running fleet: its balancer URL, replicas and database."""

    folder: Path
    postgres: Postgres
    database_url: str
    config: Path
    mode: Mode
    replicas: list[Replica] = field(default_factory=list)
    balancer: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def kill(self, index: int) -> None:
        """SIGKILL one replica: no drain, no goodbye (a crash or an OOM kill)."""
        self.replicas[index].process.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        """SIGTERM every live replica and wait: each drains, spool included, and exits."""
        live = [r.process for r in self.replicas if r.process.poll() is None]
        for process in live:
            process.send_signal(signal.SIGTERM)
        for process in live:
            process.wait(timeout=60)

    def pids(self) -> list[int]:
        return [r.process.pid for r in self.replicas]

    def balancer_log(self) -> list[str]:
        """HAProxy's request log so far (``option httplog`` lines)."""
        path = self.folder / "haproxy.log"
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def audit_rows(self) -> list[tuple[str, str, str]]:
        """(trace, replica, outcome) of every audit record with a trace."""
        import psycopg

        with psycopg.connect(self.database_url, password=PASSWORD) as conn:
            rows = conn.execute(
                "SELECT trace, replica, outcome FROM audit_records WHERE trace IS NOT NULL"
            ).fetchall()
        return [(str(t), str(r), str(o)) for t, r, o in rows]

    def session_replicas(self) -> dict[str, str]:
        """Sticky mode: each ``Mcp-Session-Id`` the balancer saw and the server (``r1``) it
        came from, read from the log lines of the responses that carried it."""
        found: dict[str, str] = {}
        for line in self.balancer_log():
            request = _HTTPLOG.search(line)
            header = _CAPTURED.search(line)
            if request is not None and header is not None and header["session"]:
                found.setdefault(header["session"], request["server"])
        return found


_HTTPLOG = re.compile(
    r" (?P<backend>\S+)/(?P<server>\S+) (?:-?\d+/){4}\+?-?\d+ (?P<status>-?\d+) \S+ \S+ \S+ "
    r"(?P<term>\S{4}) "
)
_CAPTURED = re.compile(r" \{(?P<session>[0-9a-f]*)\} \"")


def balancer_outcomes(lines: list[str]) -> dict[str, int]:
    """HAProxy log lines of requests that did not end well, grouped by status, state, server.

    The termination state's first two letters say who ended the request and in
    which phase (``SH``: the server aborted before its headers, ``sQ``: the
    queue timed out, ``--``: normal); see HAProxy's "Session state at
    disconnection".
    """
    seen: Counter[str] = Counter()
    for line in lines:
        found = _HTTPLOG.search(line)
        if found is None:
            continue
        status, term = int(found["status"]), found["term"]
        if status >= 400 or status < 0 or term[:2] != "--":
            seen[f"HTTP {status} {term[:2]} {found['server']}"] += 1
    return dict(seen.most_common())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env[PASSWORD_ENV] = PASSWORD
    return env


def _cli(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "cartograph.cli.main", *args],
        check=True,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def create_database(postgres: Postgres, name: str) -> str:
    conn = postgres.connect()
    try:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[attr-defined]
    finally:
        conn.close()  # type: ignore[attr-defined]
    return postgres.url.rsplit("/", 1)[0] + f"/{name}"


def prepare(folder: Path, postgres: Postgres, mode: Mode, database: str) -> Fleet:
    """Database, config, operator key and signed cards (the real CLI), before any replica."""
    url = create_database(postgres, database)
    folder.mkdir(parents=True, exist_ok=True)
    state = folder / "state"
    config = folder / "cartograph.toml"
    config.write_text(fleet_toml(state, url, stateless=mode == "stateless"), encoding="utf-8")
    _cli("keys", "init", "--state-dir", str(state))
    _cli("bootstrap", "--config", str(config))
    return Fleet(folder, postgres, url, config, mode)


def start_replica(fleet: Fleet, index: int) -> Replica:
    port = free_port()
    with (fleet.folder / f"replica-{index}.log").open("ab") as log:
        process = subprocess.Popen(
            [*SERVE, "--port", str(port), "--config", str(fleet.config)],
            env=_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return Replica(process, port)


def wait_ready(url: str, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{url}: exited with {process.returncode} before it was ready")
        with contextlib.suppress(httpx2.HTTPError):
            if httpx2.get(url, timeout=2.0).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{url} not ready within {READY_TIMEOUT:g}s")


def start_balancer(fleet: Fleet) -> None:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        raise RuntimeError("HAProxy is not installed; run scripts/setup (setup.d/60-fleet.sh)")
    fleet.port = free_port()
    config = fleet.folder / "haproxy.cfg"
    config.write_text(haproxy_config(fleet.mode, fleet.port, [r.port for r in fleet.replicas]))
    with (fleet.folder / "haproxy.log").open("ab") as log:
        fleet.balancer = subprocess.Popen(
            [haproxy, "-f", str(config), "-db"], stdout=log, stderr=subprocess.STDOUT
        )
    wait_ready(f"http://127.0.0.1:{fleet.port}/health", fleet.balancer)


@contextlib.contextmanager
def running(fleet: Fleet, replicas: int) -> Iterator[Fleet]:
    """Start ``replicas`` replicas and the balancer; on exit SIGTERM all (replicas drain)."""
    try:
        fleet.replicas = [start_replica(fleet, i) for i in range(replicas)]
        for replica in fleet.replicas:
            wait_ready(f"{replica.base}/health", replica.process)
        start_balancer(fleet)
        yield fleet
    finally:
        stop(fleet)


def stop(fleet: Fleet) -> None:
    processes = [r.process for r in fleet.replicas]
    if fleet.balancer is not None:
        processes.append(fleet.balancer)
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# -- load ------------------------------------------------------------------------


def traceparent() -> str:
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


@dataclass
class Attempt:
    """One try at one step of a client's work; a failed one says where and why it failed.

    ``phase`` is what the client was doing: ``initialize`` (opening a session),
    ``list`` (``tools/list``), ``call`` (``tools/call``) or ``close`` (ending it).
    A failure keeps the exception type (``kind``, or ``isError`` for an error
    result), the JSON-RPC error code, Cartograph's code from the error data,
    the message, and the HTTP status of a non-2xx response the client got
    during that attempt (the SDK turns e.g. a balancer's 503 page into a bare
    ``MCPError`` "Server returned an error response").
    """

    client: int
    trace: str
    ok: bool
    seconds: float
    error: str = ""
    phase: str = "call"
    kind: str = ""
    rpc_code: int | None = None
    code: str = ""
    http: str = ""
    at: float = 0.0
    """When the attempt ended, seconds since the load started."""
    session: str = ""
    """The ``Mcp-Session-Id`` the attempt ran in ("" before the server assigned one)."""

    @property
    def cause(self) -> str:
        """The failure's grouping key: phase, kind, codes, HTTP status, message shape."""
        parts = [self.phase, self.kind]
        if self.rpc_code is not None:
            parts.append(f"rpc {self.rpc_code}")
        if self.code:
            parts.append(self.code)
        if self.http:
            parts.append(self.http)
        message = re.sub(r"[0-9a-f]{8,}|\d+(\.\d+)?", "#", self.error)
        return " | ".join([*parts, message[:120]])


@dataclass
class Load:
    """What the clients saw: every attempt, in completion order."""

    attempts: list[Attempt] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    gave_up: list[int] = field(default_factory=list)
    """Clients that stopped short of their calls: every session they opened failed."""

    @property
    def answered(self) -> list[Attempt]:
        return [a for a in self.attempts if a.ok]

    @property
    def failed(self) -> list[Attempt]:
        return [a for a in self.attempts if not a.ok]

    @property
    def rate(self) -> float:
        return len(self.answered) / max(self.ended - self.started, 1e-9)

    def causes(self) -> dict[str, int]:
        """Failed attempts grouped by :attr:`Attempt.cause`, most frequent first."""
        return dict(Counter(a.cause for a in self.failed).most_common())


Hook = Callable[[int], Awaitable[None]]


async def drive(
    url: str,
    clients: int,
    calls: int,
    *,
    mode: Mode,
    on_progress: Hook | None = None,
    retries: int = 3,
) -> Load:
    """``clients`` SDK clients x ``calls`` answered calls each; a failed call is retried.

    Each session lists the tools once (the SDK would otherwise list them inside
    the first ``call_tool`` to validate its result, hiding a failed list behind
    the call), then calls. A sticky client whose replica is gone opens a new
    session (the balancer places it elsewhere). ``on_progress(answered)`` runs
    after every answered call.
    """
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    load = Load(started=time.monotonic())
    in_flight: dict[int, str] = {}
    answered = [0] * clients  # per client, kept across its sessions
    protocol = MODERN if mode == "stateless" else "legacy"

    # A sticky session whose replica died cannot recover: open a new one at once.
    in_session = retries if mode == "stateless" else 0

    async def one(index: int) -> None:
        sessions = retries + 1
        client = _Client(index, load, in_flight)
        while answered[index] < calls:
            client.session = ""
            async with _http_client(client) as http:
                transport = streamable_http_client(url, http_client=http)
                try:
                    client.phase, client.started = "initialize", time.monotonic()
                    async with Client(transport, mode=protocol, read_timeout_seconds=60) as c:
                        if await client.attempt("list", c.list_tools):
                            await _calls(c, client, answered, calls, on_progress, in_session)
                        client.phase = "close"
                except Exception as exc:  # the SDK ends the session when a request's stream dies
                    client.failed(in_flight.pop(index, ""), exc)
            sessions -= 1 if answered[index] < calls else 0
            if sessions < 0:
                load.gave_up.append(index)  # its attempts say why; the others carry on
                return

    async with anyio.create_task_group() as group:
        for index in range(clients):
            group.start_soon(one, index)
    load.ended = time.monotonic()
    return load


async def call_once(url: str) -> Attempt:
    """One stateless ``call`` through ``url``, no retry: what a client sees right now."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    load = Load(started=time.monotonic())
    client = _Client(0, load, {})
    async with _http_client(client) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=MODERN, read_timeout_seconds=60) as session:
            client.phase, client.started = "call", time.monotonic()
            trace = traceparent()
            arguments = {"server": "calc", "tool": "echo", "arguments": {"text": "once"}}
            meta: Any = {"traceparent": trace}  # the SDK types _meta as its own mapping
            try:
                result = await session.call_tool("call", arguments, meta=meta)
            except Exception as exc:
                client.failed(trace, exc)
            else:
                if result.is_error:
                    client.failed(trace, None, result)
                else:
                    return Attempt(0, trace, True, time.monotonic() - client.started)
    return load.attempts[-1]


@dataclass
class _Client:
    """One load client's bookkeeping: what it is doing and the HTTP errors it saw doing it."""

    index: int
    load: Load
    in_flight: dict[int, str]
    phase: str = "initialize"
    started: float = 0.0
    http: list[str] = field(default_factory=list)
    session: str = ""

    async def attempt(self, phase: str, step: Callable[[], Awaitable[Any]]) -> bool:
        """Run one step that is not a call (e.g. ``tools/list``); record it only if it fails."""
        self.phase, self.started, self.http = phase, time.monotonic(), []
        try:
            await step()
        except Exception as exc:
            self.failed("", exc)
            return False
        return True

    def failed(self, trace: str, exc: BaseException | None, result: Any = None) -> None:
        kind, rpc_code, code, message = _classify(exc, result)
        self.load.attempts.append(
            Attempt(
                self.index,
                trace,
                False,
                time.monotonic() - self.started,
                message,
                phase=self.phase,
                kind=kind,
                rpc_code=rpc_code,
                code=code,
                http="; ".join(dict.fromkeys(self.http)),
                at=time.monotonic() - self.load.started,
                session=self.session,
            )
        )
        self.http = []


def _http_client(client: _Client) -> httpx2.AsyncClient:
    """The SDK's HTTP client settings, plus a hook noting every non-2xx response."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    async def note(response: httpx2.Response) -> None:
        client.session = response.headers.get("mcp-session-id", client.session)
        if response.status_code < 400:
            return
        method = ""
        with contextlib.suppress(Exception):
            method = str(json.loads(response.request.content).get("method", ""))
        body = ""
        if not response.headers.get("content-type", "").startswith("application/json"):
            with contextlib.suppress(Exception):  # e.g. HAProxy's HTML error page: its title
                text = (await response.aread()).decode("utf-8", "replace")
                found = re.search(r"<h1>(.*?)</h1>", text)
                body = found.group(1) if found else text[:60]
        client.http.append(f"HTTP {response.status_code} {method} {body}".strip())

    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        event_hooks={"response": [note]},
    )


def _classify(exc: BaseException | None, result: Any) -> tuple[str, int | None, str, str]:
    """(kind, JSON-RPC code, Cartograph code, message) of a failed attempt."""
    if exc is None:
        structured = getattr(result, "structured_content", None) or {}
        error = structured.get("error") if isinstance(structured, dict) else None
        code = str(error.get("code", "")) if isinstance(error, dict) else ""
        return "isError", None, code, _text(result)
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "ExceptionGroup", None, "", _describe(exc)
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        data = exc.data
        code = str(data.get("code", "")) if isinstance(data, dict) else ""
        return type(exc).__name__, exc.code, code, exc.message[:200]
    return type(exc).__name__, None, "", str(exc)[:200]


async def _calls(
    session: Any,
    client: _Client,
    answered: list[int],
    calls: int,
    on_progress: Hook | None,
    retries: int,
) -> None:
    failures, index, load = 0, client.index, client.load
    while answered[index] < calls:
        trace = client.in_flight[index] = traceparent()
        client.phase, client.started, client.http = "call", time.monotonic(), []
        text = f"c{index}-{answered[index]}"
        arguments = {"server": "calc", "tool": "echo", "arguments": {"text": text}}
        try:
            result = await session.call_tool("call", arguments, meta={"traceparent": trace})
        except Exception as exc:
            del client.in_flight[index]
            client.failed(trace, exc)
        else:
            del client.in_flight[index]
            if not result.is_error:
                seconds = time.monotonic() - client.started
                load.attempts.append(Attempt(index, trace, True, seconds, session=client.session))
                answered[index] += 1
                failures = 0
                if on_progress is not None:
                    await on_progress(len(load.answered))
                continue
            client.failed(trace, None, result)
        failures += 1
        if failures > retries:
            return  # let the caller open a new session


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)[:200]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"[:200]
