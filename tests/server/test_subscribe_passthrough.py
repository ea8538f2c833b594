"""``resources/subscribe``/``unsubscribe`` through `cartograph serve`, updates forwarded back.

The upstream is our own Python-SDK server (``tests/helpers/content.py``, handshake era),
whose ``touch_small`` tool sends ``notifications/resources/updated`` for ``mem://small``
while that is subscribed, and says whether it was. The client subscribes to the URI
Cartograph lists (``cartograph://<catalog>/content/mem://small``) and must receive the
update under that URI; allow/deny policy applies and each request gets one audit record.
Handshake-era clients only: the 2026-07-28 protocol dropped both methods.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from cartograph.config.model import ServerConfig
from tests.helpers.serving import serve_http
from tests.helpers.support import toml_for
from tests.server.content_support import (
    CONTENT,
    SMALL,
    Updates,
    audited,
    http_client,
    subscribe,
    touch,
    unsubscribe,
)

pytestmark = pytest.mark.anyio

SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")
CATALOGS = """
[[catalogs]]
name = "main"
policy.deny = ["content/mem://big"]

[[catalogs]]
name = "open"
"""
BIG = "cartograph://main/content/mem://big"


def write_config(tmp_path: Path, catalogs: str) -> Path:
    content = ServerConfig(
        name="content",
        command=sys.executable,
        args=(str(CONTENT),),
        protocol="legacy",
        connect_timeout=30.0,
    )
    audit = str(tmp_path / "audit.jsonl")
    path = tmp_path / "cartograph.toml"
    path.write_text(toml_for(tmp_path / "state", content, audit_log=audit) + catalogs)
    return path


async def test_stdio_forwards_subscribe_and_the_update_under_the_namespaced_uri(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, CATALOGS.split('\n[[catalogs]]\nname = "open')[0])
    params = StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(config)],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )
    updates = Updates()
    with anyio.fail_after(120):
        async with Client(params, mode="legacy", message_handler=updates.handler) as client:
            caps = client.server_capabilities
            assert caps is not None and caps.resources is not None and caps.resources.subscribe
            assert await touch(client) == "not subscribed"
            await subscribe(client, SMALL)
            assert await touch(client) == "notified"
            assert await updates.next() == SMALL
            with pytest.raises(MCPError) as denied:
                await subscribe(client, BIG)
            assert denied.value.error.data["code"] == "resource_denied"
            await unsubscribe(client, SMALL)
            assert await touch(client) == "not subscribed"  # the unsubscribe reached upstream
    records = audited(tmp_path, "resources/subscribe", "resources/unsubscribe")
    assert [(r["proxy_tool"], r["tool"], r["outcome"]) for r in records] == [
        ("resources/subscribe", "mem://small", "ok"),
        ("resources/subscribe", "mem://big", "resource_denied"),
        ("resources/unsubscribe", "mem://small", "ok"),
    ]
    assert all(r["catalog"] == "main" and r["server"] == "content" for r in records)


async def test_http_per_catalog_and_routed_mounts_forward_subscriptions_and_updates(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, CATALOGS)
    updates, routed_updates = Updates(), Updates()
    opened = "cartograph://open/content/mem://small"
    with serve_http(config, "--mount-mode", "routed") as served, anyio.fail_after(150):
        async with (
            http_client(f"{served.mcp}/main", "legacy", updates.handler) as main,
            http_client(f"{served.mcp}/routed", "legacy", routed_updates.handler) as routed,
        ):
            await subscribe(main, SMALL)
            assert await touch(main, "main_call") == "notified"
            assert await updates.next() == SMALL
            await unsubscribe(main, SMALL)
            assert await touch(main, "main_call") == "not subscribed"
            # Each catalog runs its own upstream sessions: the routed mount routes by the URI.
            await subscribe(routed, opened)
            assert await touch(routed, catalog="open") == "notified"
            assert await routed_updates.next() == opened
            assert updates.uris == [SMALL]  # told only of what it subscribed to
            with pytest.raises(MCPError) as unknown:
                await subscribe(routed, "cartograph://nosuch/content/mem://small")
            assert unknown.value.error.data["code"] == "unknown_resource"
            await unsubscribe(routed, opened)
            assert await touch(routed, catalog="open") == "not subscribed"
    records = audited(tmp_path, "resources/subscribe", "resources/unsubscribe")
    assert {(r["catalog"], r["proxy_tool"], r["outcome"]) for r in records} >= {
        ("main", "resources/subscribe", "ok"),
        ("main", "resources/unsubscribe", "ok"),
        ("open", "resources/subscribe", "ok"),
        ("routed", "resources/subscribe", "unknown_resource"),
    }


def test_an_upstream_subscription_ends_only_with_the_last_clients_unsubscribe() -> None:
    from cartograph.server.passthrough import CatalogContent

    content = CatalogContent("main")
    content.hold("content", "mem://small", "alice|http:1")
    content.hold("content", "mem://small", "bob|http:2")
    assert not content.release("content", "mem://small", "alice|http:1")
    assert content.release("content", "mem://small", "bob|http:2")
    assert content.release("content", "mem://other", "carol|local")  # never held: forward
