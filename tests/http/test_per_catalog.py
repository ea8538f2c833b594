"""Per-catalog endpoints: unchanged by routing, prefixed names, instructions, /health."""

from __future__ import annotations

import json

import pytest

from cartograph.server.routed import RoutedHandlers
from tests.http.support import (
    Ledger,
    RecordingSurface,
    assemble,
    http_client,
    mcp_client,
    serving,
    tool_text,
)

pytestmark = pytest.mark.anyio

THREE = ("alpha", "beta", "gamma")


async def _raw_tools_list(url: str) -> bytes:
    async with mcp_client(url) as client:
        listed = await client.list_tools()
    return json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True)).encode()


async def test_per_catalog_tools_list_is_byte_identical_with_routing_on_and_off() -> None:
    off = assemble(THREE, proxy_tools={"beta": ("discover",)})
    on = assemble(THREE, routed=True, proxy_tools={"beta": ("discover",)})
    payloads: dict[bool, list[bytes]] = {}
    for routed, built in ((False, off), (True, on)):
        with serving(built.app) as base:
            payloads[routed] = [await _raw_tools_list(f"{base}/mcp/{n}") for n in THREE]
            payloads[routed].append(await _raw_tools_list(f"{base}/mcp?catalog=beta"))
    assert payloads[True] == payloads[False]
    assert b"alpha_discover" in payloads[True][0]


async def test_per_catalog_dispatch_is_identical_with_routing_on_and_off() -> None:
    outputs = []
    for routed in (False, True):
        built = assemble(THREE, routed=routed)
        with serving(built.app) as base:
            async with mcp_client(f"{base}/mcp/gamma") as client:
                result = await client.call_tool("gamma_status", {})
        outputs.append((tool_text(result), built.ledger.decisions, built.ledger.audits))
    assert outputs[0] == outputs[1]


async def test_instructions_name_prefixed_tools_per_catalog_and_bare_ones_routed() -> None:
    built = assemble(THREE, routed=True, proxy_tools={"beta": ("discover", "status")})
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/beta", mode="legacy") as client:
            per_catalog = client.session.initialize_result.instructions  # type: ignore[union-attr]
        async with mcp_client(f"{base}/mcp/routed", mode="legacy") as client:
            routed = client.session.initialize_result.instructions  # type: ignore[union-attr]
    assert per_catalog is not None and "beta_discover" in per_catalog
    assert routed is not None
    assert "beta_" not in routed
    assert 'catalog="beta": discover, status' in routed
    assert 'catalog="alpha": discover, status, call' in routed


def test_routed_instructions_with_one_catalog_say_the_argument_is_optional() -> None:
    handlers = RoutedHandlers({"solo": RecordingSurface("solo", Ledger())})
    text = handlers.instructions()
    assert "optional" in text and '"solo"' in text


def test_health_reports_mount_mode_and_routed_path_only_when_routing_is_on() -> None:
    docs = {}
    for routed in (False, True):
        with serving(assemble(THREE, routed=routed).app) as base, http_client(base) as http:
            docs[routed] = http.get("/health").json()
    assert "mount_mode" not in docs[False] and "routed_path" not in docs[False]
    assert docs[True]["mount_mode"] == "routed"
    assert docs[True]["routed_path"] == "/mcp/routed"
    assert [c["path"] for c in docs[False]["catalogs"]] == [f"/mcp/{n}" for n in THREE]


async def test_with_routing_off_mcp_routed_falls_through_to_a_catalog_named_routed() -> None:
    built = assemble(("routed", "dev"))
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/routed") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("routed_status", {})
    assert names == ["routed_discover", "routed_status", "routed_call"]
    assert "catalog" not in json.dumps([n for n in names])
    assert json.loads(tool_text(result))["catalog"] == "routed"
