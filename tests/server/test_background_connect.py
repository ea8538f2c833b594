"""Serving from cards at once: discover before upstreams connect, drift as each listing arrives.

A runtime started with ``connect_later`` answers ``discover`` from verified
cards and the index alone; ``connect_upstreams`` then connects in the
background. The opener here is the real stdio opener behind a gate the test
holds, so "not connected yet" is a state the test controls, not a race.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.model import Catalog
from cartograph.config.model import Config, ServerConfig
from cartograph.gateway.pool import Upstream, default_opener
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime.catalog import CatalogRuntime
from tests.helpers.support import config_for, scriptable
from tests.server.support import call, code, text

WAIT = 30.0


class Gate:
    """An opener that connects for real, but only once the test opens the gate."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.open = anyio.Event()

    async def __call__(self, cfg: ServerConfig) -> Upstream:
        self.entered.set()
        await self.open.wait()
        return await default_opener(cfg)


async def _cards_with_echo_changed(config: Config) -> Catalog:
    """The live listing, with echo's description changed: the card pins what is not served."""
    runtime = await CatalogRuntime.start(config, config.servers, unsafe_throwaway_key=True)
    try:
        live = runtime.live["calc"]
    finally:
        await runtime.aclose()
    tools = tuple(
        t.model_copy(update={"description": "Repeat the text."}) if t.name == "echo" else t
        for t in live.tools
    )
    return Catalog(servers=(live.model_copy(update={"tools": tools}),))


@asynccontextmanager
async def started_later(tmp_path: Path, gate: Gate) -> AsyncIterator[CatalogRuntime]:
    config = config_for(tmp_path, scriptable("calc"))
    cards = attest_with_unsafe_throwaway_key(await _cards_with_echo_changed(config))
    runtime = await CatalogRuntime.start(
        config, config.servers, cards=cards, opener=gate, connect_later=True, share_sessions=True
    )
    try:
        yield runtime
    finally:
        await runtime.aclose()


def _found(runtime: CatalogRuntime, task: str) -> list[str]:
    return [t.tool for t in runtime.discover(task, 13).tools]


@pytest.mark.anyio
async def test_discover_answers_from_cards_before_any_upstream_connects(tmp_path: Path) -> None:
    gate = Gate()
    async with started_later(tmp_path, gate) as runtime:
        assert not gate.entered.is_set()  # start-up opened nothing
        assert "add" in _found(runtime, "add two integers")
        report = runtime.status()
        calc = report["servers"][0]
        assert (calc["health"], calc["drift_checked"]) == ("connecting", False)
        assert report["totals"]["unchecked"] == 1


@pytest.mark.anyio
@pytest.mark.promise("P-CARD-2")
async def test_drift_applies_when_the_listing_arrives_in_the_background(tmp_path: Path) -> None:
    gate = Gate()
    async with started_later(tmp_path, gate) as runtime:
        assert "echo" in _found(runtime, "echo the text back")  # unchecked: served from the card
        gate.open.set()
        with anyio.fail_after(WAIT):
            await runtime.connect_upstreams()
        assert "echo" not in _found(runtime, "echo the text back")
        calc = runtime.status()["servers"][0]
        assert (calc["health"], calc["drift_checked"]) == ("up", True)
        assert [d["tool"] for d in calc["drifted"]] == ["echo"]
        refused = await call(ProxyHandlers(runtime, catalog="default"), "calc", "echo", text="x")
        assert code(refused) == "tool_drifted"


@pytest.mark.anyio
async def test_a_call_before_the_connection_waits_for_it_then_succeeds(tmp_path: Path) -> None:
    gate = Gate()
    results: list[str] = []
    async with started_later(tmp_path, gate) as runtime:
        handlers = ProxyHandlers(runtime, catalog="default")

        async def add() -> None:
            results.append(text(await call(handlers, "calc", "add", a=1, b=2)))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                group.start_soon(runtime.connect_upstreams)
                group.start_soon(add)
                await gate.entered.wait()
                assert results == []  # the call is waiting on the connection, not failed
                gate.open.set()
    assert results == ["3"]


@pytest.mark.anyio
async def test_a_drifted_tool_called_in_the_window_is_refused_once_the_listing_arrives(
    tmp_path: Path,
) -> None:
    gate = Gate()
    results: list[str | None] = []
    async with started_later(tmp_path, gate) as runtime:
        handlers = ProxyHandlers(runtime, catalog="default")

        async def echo() -> None:
            results.append(code(await call(handlers, "calc", "echo", text="hi")))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                group.start_soon(echo)
                await gate.entered.wait()
                gate.open.set()
    assert results == ["tool_drifted"]


@pytest.mark.anyio
async def test_status_by_default_gives_totals_and_only_what_is_wrong(tmp_path: Path) -> None:
    gate = Gate()
    async with started_later(tmp_path, gate) as runtime:
        handlers = ProxyHandlers(runtime, catalog="default")
        early = (await handlers.call_tool("status", {}, principal=None)).structured_content
        gate.open.set()
        with anyio.fail_after(WAIT):
            await runtime.connect_upstreams()
        late = (await handlers.call_tool("status", {}, principal=None)).structured_content
        full = await handlers.call_tool("status", {"detail": True}, principal=None)
        bad = await handlers.call_tool("status", {"detail": "yes"}, principal=None)
    assert early is not None and late is not None and full.structured_content is not None
    assert (early["connecting"], early["problems"]) == (["calc"], [])
    assert "connecting" not in late and "servers" not in late
    assert late["problems"] == [
        {"server": "calc", "drifted": ["echo"], "fix": "cartograph bootstrap --server calc"}
    ]
    assert late["totals"]["tools_drifted"] == 1
    assert [s["name"] for s in full.structured_content["servers"]] == ["calc"]
    assert code(bad) == "bad_arguments"
