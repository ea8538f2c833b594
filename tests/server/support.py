"""Start a runtime over scriptable upstreams; call through its handlers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from hypothesis import strategies as st
from mcp.types import CallToolResult

from cartograph.cards.bootstrap import attest_catalog
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.operator import init_operator_key
from cartograph.cards.overrides import OverridingGenerator, config_overrides
from cartograph.cards.paths import trust_path
from cartograph.cards.store import CardStore
from cartograph.cards.trust import load_trust
from cartograph.config.model import Config, ServerConfig
from cartograph.gateway.results import error_code
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime.catalog import CatalogRuntime
from cartograph.upstream.federation import load_catalog_for
from tests.helpers.support import config_for


async def bootstrap(config: Config) -> None:
    """What `cartograph bootstrap` does: list live, generate with overrides, sign, write."""
    key = init_operator_key(config).key
    catalog = await load_catalog_for(config)
    overrides = config_overrides(config)
    attest_catalog(
        catalog,
        store=CardStore(config.state_dir),
        key=key,
        generator=OverridingGenerator(TemplateGenerator(), overrides),
        overrides=overrides,
        configs={s.name: s for s in config.servers},
        trust=load_trust(trust_path(config)),
    )


@asynccontextmanager
async def signed_serving(config: Config) -> AsyncIterator[ProxyHandlers]:
    """``config``'s federation served with the operator's signed cards (no throwaway key)."""
    await bootstrap(config)
    runtime = await CatalogRuntime.start(config, config.servers)
    try:
        yield ProxyHandlers(runtime, catalog="default")
    finally:
        await runtime.aclose()


@asynccontextmanager
async def running(
    state_dir: Path,
    *servers: ServerConfig,
    share: bool = True,
    learning: bool = False,
    **gateway: Any,
) -> AsyncIterator[ProxyHandlers]:
    config = config_for(state_dir, *servers, learning=learning, **gateway)
    runtime = await CatalogRuntime.start(
        config, config.servers, unsafe_throwaway_key=True, share_sessions=share
    )
    try:
        yield ProxyHandlers(runtime, catalog="default")
    finally:
        await runtime.aclose()


async def call(
    handlers: ProxyHandlers, server: str, tool: str, client: str | None = None, **arguments: Any
) -> CallToolResult:
    return await handlers.call_tool(
        "call",
        {"server": server, "tool": tool, "arguments": arguments},
        principal=None,
        client=client,
    )


def text(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def code(result: CallToolResult) -> str | None:
    return error_code(result)


async def until_drift(h: ProxyHandlers, predicate: Callable[[], bool], limit: float = 30.0) -> None:
    """Wait (bounded) until ``predicate`` holds, woken by the drift view's own change event."""
    changed = asyncio.Event()
    h.runtime.drift_view.subscribe(changed.set)
    with anyio.fail_after(limit):
        while not predicate():
            await changed.wait()
            changed.clear()


async def wait_until(predicate: Callable[[], bool], limit: float = 10.0) -> None:
    """Bounded wait for state owned by another task that offers no event to await."""
    with anyio.fail_after(limit):
        while not predicate():  # noqa: ASYNC110 - the observed state has no event
            await anyio.sleep(0.01)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
