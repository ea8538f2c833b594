"""Three catalogs in one process with the real gateway, a real upstream and the SDK client.

Everything below ``build_http_app`` is the production path: ``http_app`` (what
``serve --http`` runs) starts one ``CatalogRuntime`` per catalog, wraps each in
``ProxyHandlers`` (prefixed for its endpoint, bare for the routed mount) and
talks to a real MCP server over streamable HTTP.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cartograph.config.model import (
    CatalogPolicy,
)
from cartograph.gateway.audit import kept_records
from cartograph.server.http import ServedApp, http_app
from tests.helpers.scriptable import HeaderLog
from tests.http.support import (
    error_code,
    http_client,
    mcp_client,
    modern_request,
    serving,
    tool_text,
)
from tests.http.three_catalogs import ENV, SCOPED, TOKEN, UPSTREAM_KEY, three_catalogs

pytestmark = pytest.mark.anyio

CATALOGS = ("alpha", "beta", "gamma")
DISCOVERY_ONLY = CatalogPolicy(proxy_tools=("discover", "status"))
NO_ADD = CatalogPolicy(deny=("echo/add",))
ADD = {"server": "echo", "tool": "add", "arguments": {"a": 1, "b": 2}}


@pytest.fixture
async def served(
    tmp_path: Path, upstream: tuple[str, HeaderLog]
) -> AsyncIterator[tuple[ServedApp, str]]:
    config = three_catalogs(tmp_path / "state", upstream[0])
    async with http_app(config, mount_mode="routed", unsafe_throwaway_key=True, environ=ENV) as app:
        with serving(app.app) as base:
            yield app, base


def _audits(app: ServedApp) -> list[Any]:
    records: list[Any] = []
    seen: set[int] = set()
    for mount in app.mounts:
        log = mount.surface.audit  # type: ignore[attr-defined]
        if id(log) not in seen:
            seen.add(id(log))
            records.extend(log.records)
    return records


@pytest.mark.promise("P-AUTH-3")
async def test_a_routed_call_runs_at_the_real_target_with_one_decision_and_one_audit(
    served: tuple[ServedApp, str],
) -> None:
    """The real app and upstream; ``authorize`` is the real method, observed, not replaced."""
    app, base = served
    decisions: list[tuple[str | None, str, str]] = []
    for surface in [*(m.surface for m in app.mounts), *app.routed_targets.values()]:
        original = surface.authorize  # type: ignore[attr-defined]

        def observed(principal: str | None, catalog: str, tool: str, _orig: Any = original) -> None:
            decisions.append((principal, catalog, tool))
            _orig(principal, catalog, tool)

        surface.authorize = observed  # type: ignore[attr-defined]
    async with mcp_client(f"{base}/mcp/routed", token=TOKEN) as client:
        result = await client.call_tool(
            "call",
            {"catalog": "gamma", "server": "echo", "tool": "echo", "arguments": {"message": "hi"}},
        )
        denied = await client.call_tool("call", {"catalog": "gamma", **ADD})
    assert not result.is_error, tool_text(result)
    assert json.loads(tool_text(result)) == {"message": "hi"}
    assert error_code(denied) == "tool_denied"
    assert decisions == [("carol", "gamma", "call"), ("carol", "gamma", "call")]
    records = [(r.catalog, r.principal, r.server, r.tool, r.outcome) for r in _audits(app)]
    assert records == [
        ("gamma", "carol", "echo", "echo", "ok"),
        ("gamma", "carol", "echo", "add", "tool_denied"),
    ]


async def test_routed_policy_refusals_name_the_catalog_and_the_config_key(
    served: tuple[ServedApp, str],
) -> None:
    _, base = served
    async with mcp_client(f"{base}/mcp/routed", token=TOKEN) as client:
        hidden = await client.call_tool(
            "call", {"catalog": "beta", "server": "echo", "tool": "echo", "arguments": {}}
        )
        denied = await client.call_tool(
            "call",
            {"catalog": "gamma", "server": "echo", "tool": "add", "arguments": {"a": 1, "b": 2}},
        )
        allowed = await client.call_tool(
            "call",
            {"catalog": "alpha", "server": "echo", "tool": "add", "arguments": {"a": 1, "b": 2}},
        )
        missing = await client.call_tool("status", {})
    assert error_code(hidden) == "tool_not_exposed"
    assert 'catalogs[name="beta"].policy.proxy_tools' in tool_text(hidden)
    assert error_code(denied) == "tool_denied"
    assert 'catalogs[name="gamma"].policy' in tool_text(denied)
    assert tool_text(allowed) == "3"
    assert error_code(missing) == "catalog_required"


@pytest.mark.promise("P-AUTH-2")
@pytest.mark.promise("P-AUTH-5")
async def test_a_principal_scoped_to_alpha_cannot_reach_beta_through_either_mount(
    served: tuple[ServedApp, str],
) -> None:
    app, base = served
    echo = {"server": "echo", "tool": "echo", "arguments": {"message": "x"}}
    with http_client(base, SCOPED) as http:
        own_endpoint = http.post("/mcp/beta", **modern_request("tools/list"))
        direct = {
            tool: http.post("/mcp/beta", **modern_request("tools/call", {"name": tool, **args}))
            for tool, args in (
                ("beta_discover", {"arguments": {"task": "echo"}}),
                ("beta_status", {"arguments": {}}),
                ("beta_call", {"arguments": echo}),
            )
        }
    async with mcp_client(f"{base}/mcp/routed", token=SCOPED) as client:
        listed = sorted(t.name for t in (await client.list_tools()).tools)
        status_b = await client.call_tool("status", {"catalog": "beta"})
        discover_b = await client.call_tool("discover", {"catalog": "beta", "task": "echo"})
        call_b = await client.call_tool("call", {"catalog": "beta", **echo})  # beta hides call
        call_g = await client.call_tool("call", {"catalog": "gamma", **echo})  # gamma exposes it
        status_a = await client.call_tool("status", {"catalog": "alpha"})
    # P-AUTH-5: beta and gamma answer exactly as catalogs that do not exist
    assert own_endpoint.status_code == 404
    assert {tool: r.status_code for tool, r in direct.items()} == dict.fromkeys(direct, 404)
    assert listed == ["call", "discover", "status"]
    assert error_code(status_b) == "unknown_catalog"
    assert error_code(discover_b) == "unknown_catalog"
    # authorization comes first: an outsider learns nothing about beta's policy
    assert error_code(call_b) == "unknown_catalog"
    assert error_code(call_g) == "unknown_catalog"
    assert not status_a.is_error
    assert not [r for r in _audits(app) if r.catalog != "alpha" and r.outcome == "ok"]
    assert app.audit is not None
    refused = [(r.catalog, r.principal, r.outcome) for r in kept_records(app.audit)]
    assert refused == [("beta", "alice", "catalog_forbidden")] * 4 + [
        ("beta", "alice", "catalog_forbidden")
    ] * 3 + [("gamma", "alice", "catalog_forbidden")]


@pytest.mark.promise("P-AUTH-1")
async def test_the_client_authorization_header_and_cookies_never_reach_the_upstream(
    served: tuple[ServedApp, str], upstream: tuple[str, HeaderLog]
) -> None:
    _, base = served
    _, log = upstream
    log.requests.clear()
    cookie = {"Cookie": "session=client-cookie-value"}
    for path, tool, extra in (
        ("/mcp/routed", "call", {"catalog": "alpha"}),
        ("/mcp/alpha", "alpha_call", {}),
    ):
        async with mcp_client(f"{base}{path}", token=TOKEN, headers=cookie) as client:
            result = await client.call_tool(
                tool, {**extra, "server": "echo", "tool": "echo", "arguments": {"message": "x"}}
            )
            assert not result.is_error, tool_text(result)
    assert log.requests, "the upstream saw no request at all"
    assert "authorization" not in log.names()
    assert "cookie" not in log.names()
    assert not any(TOKEN in v or "client-cookie-value" in v for v in log.values())
    assert all(r.get("x-upstream-key") == UPSTREAM_KEY for r in log.requests)


async def test_three_catalogs_one_process_per_catalog_and_routed_tools_list_bytes(
    served: tuple[ServedApp, str],
) -> None:
    _, base = served
    sizes: dict[str, int] = {}
    with http_client(base, TOKEN) as http:
        for path in (*(f"/mcp/{c}" for c in CATALOGS), "/mcp/routed"):
            response = http.post(path, **modern_request("tools/list"))
            assert response.status_code == 200, response.text
            sizes[path] = len(response.content)
    per_catalog = sum(sizes[f"/mcp/{c}"] for c in CATALOGS)
    routed = sizes["/mcp/routed"]
    # The catalog property makes each schema a little larger, so "well under two copies"
    # of one mount, not "exactly one".
    assert routed < 2 * max(sizes[f"/mcp/{c}"] for c in CATALOGS), sizes
    assert routed < per_catalog, sizes


async def test_instructions_name_the_tools_as_each_mount_shows_them(
    served: tuple[ServedApp, str],
) -> None:
    _, base = served
    texts = {}
    for path in ("/mcp/alpha", "/mcp/routed"):
        async with mcp_client(f"{base}{path}", token=TOKEN, mode="legacy") as client:
            result = client.session.initialize_result
            assert result is not None
            texts[path] = result.instructions or ""
    assert "`alpha_discover`" in texts["/mcp/alpha"] and "`discover`" not in texts["/mcp/alpha"]
    # one text goes to every client and alice reaches only alpha: it names no catalog (P-AUTH-5)
    assert "`catalog`" in texts["/mcp/routed"] and "`discover`" in texts["/mcp/routed"]
    assert not any(c in texts["/mcp/routed"] for c in CATALOGS)
    assert "alpha_" not in texts["/mcp/routed"]


async def test_routed_instructions_name_each_catalog_when_every_principal_reaches_all(
    served_open: tuple[ServedApp, str],
) -> None:
    _, base = served_open
    async with mcp_client(f"{base}/mcp/routed", mode="legacy") as client:
        result = client.session.initialize_result
        assert result is not None
        text = result.instructions or ""
    assert 'catalog="beta": discover, status' in text
    assert 'catalog="alpha": discover, status, call' in text
    assert "alpha_" not in text


INSPECTOR_DIRS = (".tools/inspector", "tools/inspector", ".")


def _inspector() -> Path:
    """The MCP Inspector CLI that scripts/setup installs; $CARTOGRAPH_INSPECTOR overrides."""
    repo = Path(__file__).resolve().parents[2]
    candidates = [
        os.environ.get("CARTOGRAPH_INSPECTOR", ""),
        *(str(repo / d / "node_modules/.bin/mcp-inspector") for d in INSPECTOR_DIRS),
        shutil.which("mcp-inspector") or "",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    pytest.skip("MCP Inspector CLI not installed (scripts/setup, or set $CARTOGRAPH_INSPECTOR)")


def _inspect(url: str, *args: str) -> dict[str, Any]:
    command = [str(_inspector()), "--cli", url, "--transport", "http", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


@pytest.fixture
async def served_open(
    tmp_path: Path, upstream: tuple[str, HeaderLog]
) -> AsyncIterator[tuple[ServedApp, str]]:
    config = three_catalogs(tmp_path / "state", upstream[0], tokens=False)
    async with http_app(config, mount_mode="routed", unsafe_throwaway_key=True) as app:
        with serving(app.app) as base:
            yield app, base


@pytest.mark.integration
async def test_the_inspector_cli_lists_and_calls_on_a_per_catalog_and_the_routed_mount(
    served_open: tuple[ServedApp, str],
) -> None:
    _, base = served_open
    per_catalog = _inspect(f"{base}/mcp/alpha", "--method", "tools/list")
    routed = _inspect(f"{base}/mcp/routed", "--method", "tools/list")
    assert [t["name"] for t in per_catalog["tools"]] == [
        "alpha_discover",
        "alpha_status",
        "alpha_call",
    ]
    assert sorted(t["name"] for t in routed["tools"]) == ["call", "discover", "status"]
    assert all("catalog" in t["inputSchema"]["required"] for t in routed["tools"])
    called = _inspect(
        f"{base}/mcp/routed",
        *("--method", "tools/call", "--tool-name", "discover"),
        *("--tool-arg", "catalog=gamma", "task=echo a message back"),
    )
    assert not called.get("isError"), called
    status = _inspect(f"{base}/mcp/alpha", "--method", "tools/call", "--tool-name", "alpha_status")
    assert not status.get("isError"), status
