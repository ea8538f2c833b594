"""UpstreamSession against in-process servers: both protocol eras, pagination, deadlines."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import TextIO

import anyio
import pytest
from mcp.server import Server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ServerEvent,
    ToolsListChanged,
)

from cartograph.config.model import ServerConfig
from cartograph.errors import UpstreamProtocolError, UpstreamTimeout, UpstreamUnavailable
from cartograph.upstream.session import UpstreamSession
from tests.helpers.support import scriptable
from tests.upstream.support import fake, tool

pytestmark = pytest.mark.anyio


HANG_GUARD = 30.0
"""Fails a test that hangs; never a speed target (those live in benchmarks/)."""


def cfg(name: str = "fake", **kwargs: object) -> ServerConfig:
    return ServerConfig.model_validate({"name": name, "command": "unused", **kwargs})


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_session_lists_and_calls_tools_in_either_protocol_era(protocol: str) -> None:
    upstream = fake(["echo", "other"])
    session = await UpstreamSession.open(cfg(protocol=protocol), target=upstream.server())
    try:
        server = await session.list_tools()
        result = await session.call_tool("echo", {"text": "hi"}, timeout=5)
    finally:
        await session.aclose()
    assert [t.name for t in server.tools] == ["echo", "other"]
    assert server.name == "fake"
    assert result.content[0].text == "hi"  # type: ignore[union-attr]
    expected = "2026-07-28" if protocol == "auto" else "2025-11-25"
    assert session.protocol_version == expected
    assert session.last_list_bytes > 0


async def test_list_tools_follows_every_pagination_cursor() -> None:
    upstream = fake([f"t{i}" for i in range(7)], page_size=3)
    session = await UpstreamSession.open(cfg(), target=upstream.server())
    try:
        server = await session.list_tools()
    finally:
        await session.aclose()
    assert [t.name for t in server.tools] == [f"t{i}" for i in range(7)]


async def test_a_cursor_that_repeats_is_a_protocol_error_not_a_hang() -> None:
    upstream = fake([f"t{i}" for i in range(7)], page_size=3, repeat_cursor=True)
    session = await UpstreamSession.open(cfg(), target=upstream.server())
    try:
        with pytest.raises(UpstreamProtocolError) as caught:
            await session.list_tools()
    finally:
        await session.aclose()
    assert caught.value.code == "upstream_protocol"


@pytest.mark.promise("P-REL-1")
async def test_a_hung_tool_yields_a_typed_timeout_within_the_deadline() -> None:
    upstream = fake(["hang"])
    session = await UpstreamSession.open(cfg(), target=upstream.server())
    try:
        with anyio.fail_after(HANG_GUARD), pytest.raises(UpstreamTimeout) as caught:
            await session.call_tool("hang", {}, timeout=0.3)
    finally:
        upstream.hang_forever.set()
        await session.aclose()
    assert caught.value.code == "upstream_timeout"


async def test_a_session_opened_in_one_task_serves_calls_from_others() -> None:
    upstream = fake(["echo"])
    opened: list[UpstreamSession] = []

    async def opener() -> None:
        opened.append(await UpstreamSession.open(cfg(), target=upstream.server()))

    await asyncio.create_task(opener())
    session = opened[0]
    texts: list[str] = []

    async def caller(i: int) -> None:
        result = await session.call_tool("echo", {"text": str(i)}, timeout=5)
        texts.append(result.content[0].text)  # type: ignore[union-attr]

    try:
        async with anyio.create_task_group() as tasks:
            for i in range(5):
                tasks.start_soon(caller, i)
    finally:
        await session.aclose()
    assert sorted(texts) == ["0", "1", "2", "3", "4"]


async def test_a_closed_session_refuses_calls_with_a_clear_code() -> None:
    session = await UpstreamSession.open(cfg(), target=fake(["echo"]).server())
    assert session.alive
    await session.aclose()
    assert not session.alive
    with pytest.raises(UpstreamUnavailable) as caught:
        await session.call_tool("echo", {}, timeout=1)
    assert caught.value.code == "upstream_session_closed"


async def test_tools_list_changed_reaches_the_callback_on_a_handshake_era_session() -> None:
    upstream = fake(["grow"])
    session = await UpstreamSession.open(cfg(protocol="legacy"), target=upstream.server())
    changed = anyio.Event()
    seen: list[str] = []

    def on_change(server: str) -> None:
        seen.append(server)
        changed.set()

    session.on_tools_changed(on_change)
    try:
        await session.call_tool("grow", {}, timeout=5)
        with anyio.fail_after(5):
            await changed.wait()
        server = await session.list_tools()
    finally:
        await session.aclose()
    assert seen == ["fake"]
    assert [t.name for t in server.tools] == ["grow", "grown_1"]


class _WatchedBus(InMemorySubscriptionBus):
    """A bus that says when a listen stream subscribes, so the test can publish after it."""

    def __init__(self) -> None:
        super().__init__()
        self.subscribed = anyio.Event()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self.subscribed.set()
        return unsubscribe


async def test_tools_list_changed_reaches_the_callback_on_a_2026_07_28_listen_stream() -> None:
    """The modern era has no unsolicited notifications: changes arrive on ``client.listen()``."""
    bus = _WatchedBus()
    upstream = fake(["echo"])
    server = Server(
        "fake",
        on_list_tools=upstream._list,
        on_call_tool=upstream._call,
        on_subscriptions_listen=ListenHandler(bus),
    )
    session = await UpstreamSession.open(cfg(protocol="auto"), target=server)
    changed = anyio.Event()
    seen: list[str] = []

    def on_change(name: str) -> None:
        seen.append(name)
        changed.set()

    session.on_tools_changed(on_change)
    try:
        assert session.protocol_version == "2026-07-28"
        upstream.tools.append(tool("added_later"))
        with anyio.fail_after(5):
            await bus.subscribed.wait()  # the session's owner task opened its listen stream
            await bus.publish(ToolsListChanged())
            await changed.wait()
        listed = await session.list_tools()
    finally:
        await session.aclose()
    assert seen == ["fake"]
    assert [t.name for t in listed.tools] == ["echo", "added_later"]


def test_a_stdio_session_dropped_without_aclose_closes_its_stderr_file() -> None:
    """Else the file's own finaliser warns (ResourceWarning) inside a later, unrelated test."""

    async def open_and_drop() -> TextIO:
        session = await UpstreamSession.open(scriptable("dropped"))
        stderr = session._stderr
        assert stderr is not None and not stderr.handle.closed
        handle = stderr.handle
        return handle  # the run ends: its owner task is cancelled, the session dropped

    handle = asyncio.run(open_and_drop())
    gc.collect()
    assert handle.closed
