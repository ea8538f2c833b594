"""``cartograph serve`` as a real subprocess over HTTP, for shutdown, fault and load runs."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")


def free_port() -> int:
    """A loopback port free now (for a process that cannot be told to pick its own)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ServeProcess:
    """A running ``serve --http``: its process and its URLs."""

    process: subprocess.Popen[bytes]
    base: str
    stderr: bytearray
    """Everything serve wrote on stderr so far (complete once the process has exited)."""

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout: float = 30.0) -> int:
        return self.process.wait(timeout=timeout)


@contextlib.contextmanager
def serve_http(config: Path, *extra: str, ready_timeout: float = 90.0) -> Iterator[ServeProcess]:
    """Start ``serve --http`` on a port the kernel picks; yield once it announces its URL.

    ``serve`` prints ``cartograph serving on URL`` on stderr after its catalogs
    are up and its socket listens, so the line is the readiness event: no
    polling of ``/health``, and no port picked in advance that another process
    could take first. stderr keeps draining in a thread so the pipe never fills.
    """
    command = [sys.executable, *SERVE, "--http", "--port", "0", "--config", str(config)]
    process = subprocess.Popen(
        [*command, *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=Path.cwd()
    )
    assert process.stderr is not None
    drainer: threading.Thread | None = None
    said = bytearray()
    try:
        base = _announced_url(process.stderr.fileno(), process, ready_timeout, said)
        drainer = threading.Thread(target=_drain, args=(process.stderr.fileno(), said), daemon=True)
        drainer.start()
        yield ServeProcess(process, base, said)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        if drainer is not None:
            drainer.join(timeout=30)
        process.stderr.close()


ANNOUNCED = re.compile(rb'cartograph serving on (http://[^\s"]+)')
"""The announcement, as a text line or inside a JSON log line (``--log-format json``)."""


def _drain(fd: int, said: bytearray) -> None:
    """Keep reading stderr so the pipe never fills; keep what was said."""
    while chunk := os.read(fd, 65536):
        said += chunk


def _announced_url(fd: int, process: subprocess.Popen[bytes], limit: float, said: bytearray) -> str:
    """Read stderr until serve announces its URL; fail with what it said if it exits first."""
    while (found := ANNOUNCED.search(said)) is None:
        ready, _, _ = select.select([fd], [], [], limit)
        chunk = os.read(fd, 65536) if ready else b""
        if not chunk:
            process.kill()
            why = "exited" if ready else f"said nothing within {limit} s"
            raise AssertionError(f"serve {why}: {said.decode(errors='replace')[-2000:]}")
        said += chunk
    return found.group(1).decode("ascii")


def alive(pid: int) -> bool:
    """Whether ``pid`` exists (benchmarks use it; tests wait with ``events.wait_gone``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for(predicate: Callable[[], bool], limit: float = 10.0) -> bool:
    """Bounded poll of state owned by another process that announces nothing."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())
