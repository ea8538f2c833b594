"""D187's invariants on the routed mount, driven by the SDK's real streamable-HTTP client."""

from __future__ import annotations

import json

import pytest

from tests.http.support import assemble, error_code, mcp_client, serving, tool_text

pytestmark = pytest.mark.anyio

THREE = ("alpha", "beta", "gamma")


async def test_routed_mount_lists_the_union_once_with_a_required_catalog_argument() -> None:
    built = assemble(THREE, routed=True, proxy_tools={"beta": ("discover", "status")})
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/routed") as client:
            tools = (await client.list_tools()).tools
    assert sorted(t.name for t in tools) == ["call", "discover", "status"]
    for tool in tools:
        prop = tool.input_schema["properties"]["catalog"]
        assert prop["enum"] == list(THREE)
        assert "catalog" in tool.input_schema["required"]
        assert "default" not in prop


async def test_missing_catalog_with_several_routed_is_an_error_naming_them() -> None:
    built = assemble(THREE, routed=True)
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/routed") as client:
            result = await client.call_tool("status", {})
    assert error_code(result) == "catalog_required"
    assert all(name in tool_text(result) for name in THREE)
    assert built.ledger.decisions == [] and built.ledger.audits == []


async def test_catalog_is_optional_with_exactly_one_routed_catalog() -> None:
    built = assemble(("solo",), routed=True)
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/routed") as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool("status", {})
    assert all("catalog" not in t.input_schema.get("required", []) for t in tools)
    assert not result.is_error
    assert json.loads(tool_text(result))["catalog"] == "solo"


async def test_a_tool_gated_off_in_the_named_catalog_is_refused_with_the_config_key() -> None:
    built = assemble(THREE, routed=True, proxy_tools={"beta": ("discover", "status")})
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/routed") as client:
            refused = await client.call_tool(
                "call", {"catalog": "beta", "server": "s", "tool": "t"}
            )
            allowed = await client.call_tool(
                "call", {"catalog": "gamma", "server": "s", "tool": "t"}
            )
    assert error_code(refused) == "tool_not_exposed"
    text = tool_text(refused)
    assert "'call'" in text and "'beta'" in text
    assert 'catalogs[name="beta"].policy.proxy_tools' in text
    assert not allowed.is_error
    # the refusal happened (and was audited) at the named catalog itself
    assert [(a["catalog"], a["outcome"]) for a in built.ledger.audits] == [
        ("beta", "unknown_proxy_tool"),
        ("gamma", "ok"),
    ]


async def test_one_authorization_and_one_audit_per_routed_call_naming_the_real_catalog() -> None:
    built = assemble(THREE, routed=True)
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/routed") as client:
            result = await client.call_tool(
                "call", {"catalog": "gamma", "server": "s", "tool": "t", "arguments": {"x": 1}}
            )
    assert not result.is_error
    assert json.loads(tool_text(result)) == {
        "catalog": "gamma",
        "tool": "call",
        "arguments": {"server": "s", "tool": "t", "arguments": {"x": 1}},
    }
    assert built.ledger.decisions == [(None, "gamma", "call")]
    assert [a["catalog"] for a in built.ledger.audits] == ["gamma"]
