"""``cartograph serve`` as a real subprocess over HTTP, for shutdown, fault and load runs."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2

SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ServeProcess:
    """A running ``serve --http``: its process and its URLs."""

    process: subprocess.Popen[bytes]
    base: str

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout: float = 30.0) -> int:
        return self.process.wait(timeout=timeout)


@contextlib.contextmanager
def serve_http(config: Path, *extra: str, ready_timeout: float = 90.0) -> Iterator[ServeProcess]:
    """Start ``serve --http`` on a free loopback port; yield once ``/health`` answers."""
    port = free_port()
    command = [sys.executable, *SERVE, "--http", "--port", str(port), "--config", str(config)]
    process = subprocess.Popen(
        [*command, *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=Path.cwd()
    )
    served = ServeProcess(process, f"http://127.0.0.1:{port}")
    try:
        wait_healthy(served, ready_timeout)
        yield served
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def wait_healthy(served: ServeProcess, limit: float) -> None:
    """Poll ``/health`` (bounded): serve needs a few seconds to connect and index."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            raise AssertionError(f"serve exited with {served.process.returncode}")
        try:
            if httpx2.get(f"{served.base}/health", timeout=1.0).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{served.base} never became healthy")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for(predicate: object, limit: float = 10.0) -> bool:
    """Bounded poll of state owned by another process (no event crosses the boundary)."""
    assert callable(predicate)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())
