"""The first resources/prompts listing waits for upstreams still connecting (issue 25).

Tools are served from signed cards at once; resources and prompts only exist
in live listings. Right after ``serve`` started, ``resources/list`` and
``prompts/list`` answered ``[]`` for as long as the upstreams took to connect,
and a client that lists once per process (the MCP Inspector CLI) always got
nothing. The first listing now waits for them, within a bound.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cartograph.server.content_handlers import FIRST_LIST_WAIT
from tests.helpers.support import scriptable
from tests.server.content_support import content_config
from tests.server.stdio_serving import SERVE
from tests.server.support import running

pytestmark = pytest.mark.anyio
DELAY = 3.0


async def test_the_first_listing_right_after_start_shows_a_slow_upstreams_content(
    tmp_path: Path,
) -> None:
    config = content_config(tmp_path, catalogs="")
    params = StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(config)],
        cwd=Path.cwd(),
        env={**os.environ, "CONTENT_START_DELAY": str(DELAY)},
    )
    with anyio.fail_after(120):
        async with Client(params) as client:
            resources = await client.list_resources()
            prompts = await client.list_prompts()
    uris = {str(r.uri) for r in resources.resources}
    assert any(uri.endswith("mem://small") for uri in uris), uris
    assert "content/greet" in {p.name for p in prompts.prompts}


async def test_settled_waits_for_connecting_servers_once_and_within_its_bound(
    tmp_path: Path,
) -> None:
    async with running(tmp_path / "state", scriptable("calc")) as handlers:
        runtime = handlers.runtime
        with anyio.fail_after(5):
            await runtime.settled(60.0)  # nothing connecting: at once
        runtime.unchecked.add("calc")  # as if still connecting
        started = time.monotonic()
        await runtime.settled(0.3)
        assert 0.25 <= time.monotonic() - started < 5
        with anyio.fail_after(1):
            await runtime.settled(60.0)  # waited once: later listings answer at once
        assert FIRST_LIST_WAIT <= 30
