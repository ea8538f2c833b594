"""A ``run`` right after ``serve`` starts sees the servers still connecting (issue 27).

``serve`` answers from signed cards at once and connects the upstreams behind;
a program's tool functions are built from the live listings (the write gate
reads ``readOnlyHint`` there), so a run sent right after ``initialize`` found no
``notes`` global and failed with a bare ``NameError``. A run now waits, within
a bound, for the servers still connecting; a server still not connected after
it is a clear refusal naming it, never a call without the live listing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from cartograph import error_codes as codes
from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.model import Catalog
from cartograph.cli.main import build_app
from cartograph.config.model import CodeModeConfig, ServerConfig
from cartograph.gateway.pool import Upstream, default_opener
from cartograph.server import code_tool
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime.catalog import CatalogRuntime
from tests.codemode.support import notes, run_tool
from tests.helpers.support import config_for, toml_for
from tests.server.support import code, text

pytestmark = pytest.mark.anyio
DELAY = 3.0
CODE_MODE = "\n[code_mode]\nenabled = true\nwall_time = 10.0\n"


def _signed(tmp_path: Path) -> Path:
    """A config with signed cards for ``notes``; then its upstream made slow to start."""
    path = tmp_path / "cartograph.toml"
    path.write_text(toml_for(tmp_path / "state", notes()) + CODE_MODE)
    for args in (("keys", "init", "--config", str(path)), ("bootstrap", "--config", str(path))):
        done = CliRunner().invoke(build_app(), list(args))
        assert done.exit_code == 0, done.output
    slow = notes().model_copy(update={"args": (*notes().args, "--start-delay", str(DELAY))})
    path.write_text(toml_for(tmp_path / "state", slow) + CODE_MODE)
    return path


async def test_a_run_right_after_start_calls_a_slow_upstreams_tool(tmp_path: Path) -> None:
    config = await anyio.to_thread.run_sync(_signed, tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cartograph.cli.main", "serve", "--config", str(config)],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )
    program = "len((await notes.read_note(name='alpha')).split())"
    with anyio.fail_after(120):
        async with Client(params) as client:
            result = await client.call_tool("run", {"code": program})
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    assert result.structured_content["value"] == 3


class Shut:
    """An opener that never connects until the test ends (a server stuck connecting)."""

    def __init__(self) -> None:
        self.open = anyio.Event()

    async def __call__(self, cfg: ServerConfig) -> Upstream:
        await self.open.wait()
        return await default_opener(cfg)


@asynccontextmanager
async def connecting(tmp_path: Path) -> AsyncIterator[ProxyHandlers]:
    """A code-mode catalog whose one server (``notes``, carded) is still connecting."""
    base = config_for(tmp_path, notes())
    config = base.model_copy(
        update={"code_mode": CodeModeConfig(enabled=True, wall_time=10.0, allow_writes=())}
    )
    listed = await CatalogRuntime.start(config, config.servers, unsafe_throwaway_key=True)
    try:
        cards = attest_with_unsafe_throwaway_key(Catalog(servers=(listed.live["notes"],)))
    finally:
        await listed.aclose()
    gate = Shut()
    runtime = await CatalogRuntime.start(
        config, config.servers, cards=cards, opener=gate, connect_later=True, share_sessions=True
    )
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(runtime.connect_upstreams)
            yield ProxyHandlers(runtime, catalog="default")
            group.cancel_scope.cancel()
    finally:
        await runtime.aclose()


async def test_a_server_still_connecting_after_the_wait_is_named_not_a_name_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_tool, "CONNECT_WAIT", 0.3)
    async with connecting(tmp_path) as handlers:
        assert handlers.runtime.unchecked == {"notes"}
        by_name = await run_tool(handlers, "await notes.read_note(name='alpha')")
        # `call` reaches it by upstream names; not listed, its write flag is unknown
        by_call = await run_tool(
            handlers, "await call('notes', 'write_note', {'name': 'x', 'text': 'y'})"
        )
        caught = await run_tool(
            handlers,
            "try:\n    await notes.list_notes()\n    out = 'called'\n"
            "except RuntimeError as e:\n    out = str(e)\nout\n",
        )
    for result in (by_name, by_call):
        assert result.is_error
        assert code(result) == codes.STARTING, text(result)
        assert "notes is still connecting" in text(result)
        assert "NameError" not in text(result)
    assert not caught.is_error, text(caught)
    assert caught.structured_content is not None
    assert "notes is still connecting" in caught.structured_content["value"]
