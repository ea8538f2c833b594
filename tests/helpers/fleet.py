"""A fleet on 127.0.0.1: PostgreSQL, N ``cartograph serve --http`` replicas, HAProxy in front.

Shared by ``tests/fleet`` and ``benchmarks/fleet_load.py``. Everything is real:
Debian's PostgreSQL in a throwaway cluster (:mod:`tests.helpers.postgres`),
operator cards made by the real CLI (``keys init`` + ``bootstrap``), replicas as
subprocesses reading one config, and Debian's HAProxy with the config
``docs/fleet.md`` shows for the chosen session mode:

* ``stateless``: round robin; every request self-contained (2026-07-28 era);
* ``sticky``: the balancer learns each ``Mcp-Session-Id`` from the response
  that created it and pins the session's later requests to that replica.

The load that runs against it is :mod:`tests.helpers.fleet_load`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx2

from tests.helpers.postgres import PASSWORD, PASSWORD_ENV, Postgres
from tests.helpers.serving import ANNOUNCED, free_port
from tests.helpers.support import SCRIPTABLE

Mode = Literal["stateless", "sticky"]
READY_TIMEOUT = 120.0
BIND_ATTEMPTS = 3
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
    log: Path
    offset: int = 0
    """Where this replica's lines begin in ``log`` (a restarted replica appends)."""

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
    """Start a replica on a port the kernel picks (:func:`announced_port` reads which).

    A port probed free beforehand can be taken by any process before the replica
    binds it (an outgoing connection's ephemeral port, on a busy machine).
    """
    log = fleet.folder / f"replica-{index}.log"
    offset = log.stat().st_size if log.exists() else 0
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*SERVE, "--port", "0", "--config", str(fleet.config)],
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Replica(process, 0, log, offset)


def announced_port(replica: Replica) -> int:
    """The port from the replica's ``cartograph serving on URL`` line (it listens by then)."""
    log, process = replica.log, replica.process
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        found = ANNOUNCED.search(log.read_bytes()[replica.offset :])
        if found is not None:
            return int(found.group(1).decode().rsplit(":", 1)[1])
        if process.poll() is not None:
            raise RuntimeError(f"replica exited with {process.returncode}; see {log}")
        time.sleep(0.1)
    raise RuntimeError(f"replica did not announce its URL within {READY_TIMEOUT:g}s; see {log}")


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
    # HAProxy cannot bind port 0 and say which it got: a probed port, tried again when
    # another process took it first (HAProxy then exits at once: "cannot bind socket").
    for attempt in range(BIND_ATTEMPTS):
        fleet.port = free_port()
        config = fleet.folder / "haproxy.cfg"
        config.write_text(haproxy_config(fleet.mode, fleet.port, [r.port for r in fleet.replicas]))
        with (fleet.folder / "haproxy.log").open("ab") as log:
            fleet.balancer = subprocess.Popen(
                [haproxy, "-f", str(config), "-db"], stdout=log, stderr=subprocess.STDOUT
            )
        try:
            wait_ready(f"http://127.0.0.1:{fleet.port}/health", fleet.balancer)
            return
        except RuntimeError:
            if fleet.balancer.poll() is None or attempt == BIND_ATTEMPTS - 1:
                raise


@contextlib.contextmanager
def running(fleet: Fleet, replicas: int) -> Iterator[Fleet]:
    """Start ``replicas`` replicas and the balancer; on exit SIGTERM all (replicas drain)."""
    try:
        fleet.replicas = [start_replica(fleet, i) for i in range(replicas)]
        for replica in fleet.replicas:
            replica.port = announced_port(replica)
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
