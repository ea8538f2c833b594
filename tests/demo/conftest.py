"""The demo federation for integration tests, isolated from `cartograph demo`'s own state.

Every test here uses a temporary state directory (``--state-dir``), so it
never races with ``demo/.state``. The loopback HTTP upstream runs once per
session in a portal thread; subprocesses learn its port from the
environment, as ``cartograph demo`` arranges for itself.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest
from anyio.from_thread import start_blocking_portal

from cartograph.demo.loopback import (
    DEMO_HTTP_PORT_ENV,
    everything_over_http,
)
from tests.demo.support import CLI, CONFIG, DEMO, INSTALLED, ROOT, SKIP_REASON


@pytest.fixture(scope="session")
def http_port() -> Iterator[int]:
    """server-everything over streamable HTTP on 127.0.0.1 for the whole session."""
    if not INSTALLED:
        pytest.skip(SKIP_REASON)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(everything_over_http(DEMO, export=False)) as port,
    ):
        yield port


@pytest.fixture(scope="session")
def demo_env(http_port: int) -> dict[str, str]:
    return {**os.environ, DEMO_HTTP_PORT_ENV: str(http_port)}


def cartograph(*args: str, env: dict[str, str], timeout: float = 240) -> str:
    """Run the real CLI; on failure the assertion shows its stderr."""
    done = subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.fixture(scope="session")
def attested_state(tmp_path_factory: pytest.TempPathFactory, demo_env: dict[str, str]) -> Path:
    """A state dir with an operator key and signed cards for the whole demo federation."""
    state = tmp_path_factory.mktemp("demo-state")
    common = ("--config", str(CONFIG), "--state-dir", str(state))
    cartograph("keys", "init", *common, env=demo_env)
    cartograph("bootstrap", *common, env=demo_env)
    return state


@pytest.fixture
def serve_log(tmp_path: Path) -> Iterator[TextIO]:
    """The proxy's stderr, kept out of the test output (read it when a test fails)."""
    with (tmp_path / "serve.log").open("w") as log:
        yield log
