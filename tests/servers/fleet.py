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
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
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


def haproxy_config(mode: Mode, port: int, replicas: list[int]) -> str:
    """The balancer config for ``mode`` (the same text docs/fleet.md explains)."""
    lines = [
        "global",
        "    maxconn 4096",
        "defaults",
        "    mode http",
        "    timeout connect 2s",
        "    timeout client 120s",
        "    timeout server 120s",
        "    retries 3",
        "    option redispatch",
        "frontend mcp",
        f"    bind 127.0.0.1:{port}",
        "    default_backend cartograph",
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

    def pids(self) -> list[int]:
        return [r.process.pid for r in self.replicas]

    def audit_rows(self) -> list[tuple[str, str, str]]:
        """(trace, replica, outcome) of every audit record with a trace."""
        import psycopg

        with psycopg.connect(self.database_url, password=PASSWORD) as conn:
            rows = conn.execute(
                "SELECT trace, replica, outcome FROM audit_records WHERE trace IS NOT NULL"
            ).fetchall()
        return [(str(t), str(r), str(o)) for t, r, o in rows]


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
    client: int
    trace: str
    ok: bool
    seconds: float
    error: str = ""


@dataclass
class Load:
    """What the clients saw: every attempt, in completion order."""

    attempts: list[Attempt] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0

    @property
    def answered(self) -> list[Attempt]:
        return [a for a in self.attempts if a.ok]

    @property
    def failed(self) -> list[Attempt]:
        return [a for a in self.attempts if not a.ok]

    @property
    def rate(self) -> float:
        return len(self.answered) / max(self.ended - self.started, 1e-9)


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

    A sticky client whose replica is gone opens a new session (the balancer
    places it elsewhere). ``on_progress(answered)`` runs after every answered call.
    """
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    load = Load(started=time.monotonic())
    in_flight: dict[int, str] = {}
    answered = [0] * clients  # per client, kept across its sessions
    protocol = MODERN if mode == "stateless" else "legacy"

    # A sticky session whose replica died cannot recover: open a new one at once.
    in_session = retries if mode == "stateless" else 0

    async def one(index: int) -> None:
        sessions = retries + 1
        while answered[index] < calls:
            async with create_mcp_http_client() as http:
                transport = streamable_http_client(url, http_client=http)
                try:
                    async with Client(transport, mode=protocol, read_timeout_seconds=60) as c:
                        await _calls(
                            c, index, answered, calls, load, on_progress, in_session, in_flight
                        )
                except Exception as exc:  # the SDK ends the session when a request's stream dies
                    trace = in_flight.pop(index, "")
                    load.attempts.append(Attempt(index, trace, False, 0.0, _describe(exc)))
            sessions -= 1 if answered[index] < calls else 0
            if sessions < 0:
                raise RuntimeError(f"client {index}: no session lasted; see the attempts")

    async with anyio.create_task_group() as group:
        for index in range(clients):
            group.start_soon(one, index)
    load.ended = time.monotonic()
    return load


async def _calls(
    client: Any,
    index: int,
    answered: list[int],
    calls: int,
    load: Load,
    on_progress: Hook | None,
    retries: int,
    in_flight: dict[int, str],
) -> None:
    failures = 0
    while answered[index] < calls:
        trace = in_flight[index] = traceparent()
        started = time.monotonic()
        text = f"c{index}-{answered[index]}"
        arguments = {"server": "calc", "tool": "echo", "arguments": {"text": text}}
        try:
            result = await client.call_tool("call", arguments, meta={"traceparent": trace})
            ok, error = not result.is_error, "" if not result.is_error else _text(result)
        except Exception as exc:
            ok, error = False, _describe(exc)
        del in_flight[index]
        load.attempts.append(Attempt(index, trace, ok, time.monotonic() - started, error))
        if ok:
            answered[index] += 1
            failures = 0
            if on_progress is not None:
                await on_progress(len(load.answered))
            continue
        failures += 1
        if failures > retries:
            return  # let the caller open a new session


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)[:200]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"[:200]
