"""A client cannot leave upstream subscriptions behind, nor hold any number of them.

Through `cartograph serve --http` with the SDK client, against ``tests/helpers/content.py``
declared ``stateless``: one upstream session serves every client of the catalog, and its
``touch_small`` tool says whether that session still holds ``mem://small``. Before issue 24
a client that subscribed and left (DELETE, or just went away) kept the upstream subscription
"until the proxy restarts", and a client could subscribe to any number of URIs. Now an
ended session releases its subscriptions (the upstream is told once no client holds the
URI), and one session holds at most ``[gateway] max_subscriptions_per_session``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from cartograph.config.model import ServerConfig
from tests.helpers.serving import serve_http
from tests.helpers.support import toml_for
from tests.server.content_support import (
    CONTENT,
    SMALL,
    Updates,
    audited,
    subscribe,
    touch,
    unsubscribe,
)

pytestmark = pytest.mark.anyio

CATALOG = '\n[[catalogs]]\nname = "main"\n'
IDLE = 2.0  # [gateway] session_idle_timeout: how long an abandoned session lives


def write_config(tmp_path: Path, *, idle: float = 300.0, cap: int = 100) -> Path:
    content = ServerConfig(
        name="content",
        command=sys.executable,
        args=(str(CONTENT),),
        protocol="legacy",
        connect_timeout=30.0,
    )
    audit = str(tmp_path / "audit.jsonl")
    toml = toml_for(
        tmp_path / "state",
        content,
        audit_log=audit,
        session_idle_timeout=idle,
        max_subscriptions_per_session=cap,
    )
    path = tmp_path / "cartograph.toml"
    path.write_text(toml + "stateless = true\n" + CATALOG)  # [servers.content] comes last
    return path


@asynccontextmanager
async def client_at(
    url: str, *, terminate: bool = True, updates: Updates | None = None
) -> AsyncIterator[Client]:
    """An SDK client; ``terminate=False`` leaves without DELETE (the session is abandoned)."""
    handler = updates.handler if updates is not None else None
    async with create_mcp_http_client() as http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=terminate)
        async with Client(
            transport, mode="legacy", message_handler=handler, read_timeout_seconds=30
        ) as client:
            yield client


async def released(url: str) -> None:
    """Until the upstream says it no longer holds ``mem://small`` (each try is a fresh ask)."""
    async with client_at(url) as probe:
        while True:
            if await touch(probe) == "not subscribed":
                return
            await anyio.sleep(0.1)


@pytest.mark.promise("P-REL-12")
async def test_attack_subscribe_and_delete_leaves_no_upstream_subscription(
    tmp_path: Path,
) -> None:
    with serve_http(write_config(tmp_path)) as served, anyio.fail_after(150):
        url = f"{served.mcp}/main"
        updates = Updates()
        async with client_at(url, updates=updates) as stayer:
            async with client_at(url) as leaver:
                await subscribe(leaver, SMALL)
                await subscribe(stayer, SMALL)
            # The leaver's DELETE released its hold; the stayer's keeps the upstream's.
            assert await touch(stayer) == "notified"
            assert await updates.next() == SMALL
        with anyio.fail_after(30):  # the last holder gone: the upstream was told
            await released(url)
    records = audited(tmp_path, "resources/subscribe", "resources/unsubscribe")
    assert [(r["proxy_tool"], r["outcome"]) for r in records] == [
        ("resources/subscribe", "ok"),
        ("resources/subscribe", "ok"),
    ]  # a release is the proxy's doing, not a client's request: no record


async def test_attack_subscribe_and_walk_away_is_released_at_idle_expiry(tmp_path: Path) -> None:
    with (
        serve_http(write_config(tmp_path, idle=IDLE)) as served,
        anyio.fail_after(150),
    ):
        url = f"{served.mcp}/main"
        async with client_at(url, terminate=False) as walker:
            await subscribe(walker, SMALL)
            assert await touch(walker) == "notified"
        with anyio.fail_after(IDLE + 30):  # no DELETE: the session expires, then releases
            await released(url)


async def test_attack_one_session_cannot_hold_more_than_the_subscription_cap(
    tmp_path: Path,
) -> None:
    other = "cartograph://main/content/mem://echo/"
    with (
        serve_http(write_config(tmp_path, cap=2)) as served,
        anyio.fail_after(150),
    ):
        url = f"{served.mcp}/main"
        async with client_at(url) as greedy, client_at(url) as neighbour:
            await subscribe(greedy, SMALL)
            await subscribe(greedy, other + "a")
            await subscribe(greedy, SMALL)  # held already: not counted twice
            with pytest.raises(MCPError) as refused:
                await subscribe(greedy, other + "b")
            assert refused.value.error.data["code"] == "subscription_limit"
            await subscribe(neighbour, other + "b")  # the cap is per session
            await unsubscribe(greedy, other + "a")
            await subscribe(greedy, other + "b")
    records = audited(tmp_path, "resources/subscribe")
    assert [r["outcome"] for r in records] == ["ok"] * 3 + ["subscription_limit"] + ["ok"] * 2
    assert records[3]["tool"] == "mem://echo/b"
