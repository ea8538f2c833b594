"""Run the demo federation's HTTP upstream on a free 127.0.0.1 port.

The demo config names its streamable-HTTP server as
``http://127.0.0.1:${CARTOGRAPH_DEMO_HTTP_PORT:-3001}/mcp``; this module
starts ``server-everything`` (from the demo's ``node_modules``) on a free
loopback port, exports that port, and stops the server afterwards. The
integration tests and ``cartograph demo`` both use it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final, Literal

import anyio
from anyio.abc import Process

from cartograph import error_codes as codes
from cartograph.errors import UpstreamTimeout, UpstreamUnavailable

DEMO_HTTP_PORT_ENV: Final = "CARTOGRAPH_DEMO_HTTP_PORT"
EVERYTHING_SCRIPT: Final = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
LOOPBACK_PRELOAD: Final = "bin/loopback.cjs"
START_TIMEOUT: Final = 30.0
STOP_TIMEOUT: Final = 5.0

HttpMode = Literal["streamableHttp", "sse"]


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def everything_available(demo_dir: Path) -> bool:
    return (demo_dir / EVERYTHING_SCRIPT).is_file()


def port_is_free(port: int) -> bool:
    """Whether nothing listens on 127.0.0.1:``port`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As a listener would: a previous run's connections in TIME_WAIT do not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@contextlib.asynccontextmanager
async def everything_over_http(
    demo_dir: Path,
    *,
    mode: HttpMode = "streamableHttp",
    export: bool = True,
    port: int | None = None,
) -> AsyncIterator[int]:
    """Serve server-everything over HTTP on 127.0.0.1; yields the port.

    With ``export`` the port is put in ``$CARTOGRAPH_DEMO_HTTP_PORT`` for the
    duration, so the demo config's URL points at it. ``port`` is used when it
    is free (a stable URL keeps that server's card identity, and so its card,
    unchanged across runs); otherwise the OS picks one.
    """
    if not everything_available(demo_dir):
        raise UpstreamUnavailable(
            f"{demo_dir / EVERYTHING_SCRIPT} is missing; run scripts/setup",
            code=codes.UPSTREAM_COMMAND_NOT_FOUND,
        )
    port = port if port is not None and port_is_free(port) else free_port()
    env = {**os.environ, "PORT": str(port)}
    argv = ["node", "--require", f"./{LOOPBACK_PRELOAD}", EVERYTHING_SCRIPT, mode]
    process = await anyio.open_process(
        argv, cwd=demo_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    previous = os.environ.get(DEMO_HTTP_PORT_ENV)
    try:
        await _wait_listening(port, process)
        if export:
            os.environ[DEMO_HTTP_PORT_ENV] = str(port)
        yield port
    finally:
        _restore_env(previous, export)
        with anyio.CancelScope(shield=True):
            await _stop(process)


async def _wait_listening(port: int, process: Process) -> None:
    with anyio.move_on_after(START_TIMEOUT):
        while process.returncode is None:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return
        raise UpstreamUnavailable(
            f"the demo HTTP upstream exited with status {process.returncode} before listening",
            code=codes.UPSTREAM_EXITED,
        )
    raise UpstreamTimeout(
        f"the demo HTTP upstream did not listen on 127.0.0.1:{port} within {START_TIMEOUT:g}s",
        code=codes.UPSTREAM_TIMEOUT,
    )


async def _stop(process: Process) -> None:
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(STOP_TIMEOUT):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    await process.aclose()


def _restore_env(previous: str | None, export: bool) -> None:
    if not export:
        return
    if previous is None:
        os.environ.pop(DEMO_HTTP_PORT_ENV, None)
    else:
        os.environ[DEMO_HTTP_PORT_ENV] = previous
