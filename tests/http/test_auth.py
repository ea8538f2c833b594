"""Bearer auth, fail closed, principals scoped to catalogs, through either mount (P-AUTH-2)."""

from __future__ import annotations

import json

import pytest

from cartograph.config.model import HttpConfig, TokenConfig
from cartograph.errors import AuthenticationError, ConfigError, PolicyError
from cartograph.server.auth import TokenAuthority
from tests.http.support import (
    INIT_BODY,
    MCP_HEADERS,
    assemble,
    error_code,
    http_client,
    mcp_client,
    serving,
    tool_text,
)

A_TOKEN = "token-for-alice-0123456789abcdef"
B_TOKEN = "token-for-bob-0123456789abcdef00"
ROOT_TOKEN = "token-for-root-0123456789abcdef0"
ENV = {"ALICE_TOKEN": A_TOKEN, "BOB_TOKEN": B_TOKEN, "ROOT_TOKEN": ROOT_TOKEN}


def _authority() -> TokenAuthority:
    http = HttpConfig(
        tokens=(
            TokenConfig(principal="alice", token_env="ALICE_TOKEN", catalogs=("alpha",)),
            TokenConfig(principal="bob", token_env="BOB_TOKEN", catalogs=("alpha",)),
            TokenConfig(principal="root", token_env="ROOT_TOKEN"),
        )
    )
    return TokenAuthority.from_config(http, ENV)


@pytest.mark.promise("P-AUTH-2")
def test_a_configured_token_whose_variable_is_unset_refuses_to_start() -> None:
    http = HttpConfig(tokens=(TokenConfig(principal="p", token_env="NOPE_UNSET"),))
    with pytest.raises(ConfigError) as caught:
        TokenAuthority.from_config(http, {})
    assert caught.value.code == "token_env_missing"


@pytest.mark.promise("P-AUTH-2")
def test_missing_or_wrong_tokens_are_refused_and_never_echoed() -> None:
    authority = _authority()
    for header in (None, "", "Basic abc", "Bearer wrong", f"Bearer {A_TOKEN}x"):
        with pytest.raises(AuthenticationError) as caught:
            authority.authenticate(header)
        assert A_TOKEN not in str(caught.value)
    assert authority.authenticate(f"Bearer {A_TOKEN}").name == "alice"
    with pytest.raises(PolicyError) as denied:
        authority.authorize("alice", "beta", "call")
    assert denied.value.code == "catalog_forbidden"
    with pytest.raises(AuthenticationError) as raised:
        authority.authorize(None, "alpha", "call")
    assert raised.value.code == "unauthenticated"


@pytest.mark.promise("P-AUTH-2")
def test_http_requests_without_a_valid_token_get_401_on_every_mount() -> None:
    built = assemble(("alpha", "beta"), routed=True, authority=_authority())
    with serving(built.app) as base, http_client(base) as anon, http_client(base, "bad") as bad:
        codes = [
            client.post(path, json=INIT_BODY, headers=MCP_HEADERS).status_code
            for client in (anon, bad)
            for path in ("/mcp/alpha", "/mcp/beta", "/mcp/routed", "/mcp?catalog=alpha")
        ]
        missing = anon.post("/mcp/alpha", json=INIT_BODY, headers=MCP_HEADERS)
    assert codes == [401] * 8
    assert missing.headers["www-authenticate"] == "Bearer"
    assert built.ledger.decisions == []


@pytest.mark.anyio
@pytest.mark.promise("P-AUTH-2")
@pytest.mark.promise("P-AUTH-5")
async def test_a_principal_scoped_to_alpha_lists_the_routed_mount_but_cannot_act_in_beta() -> None:
    built = assemble(("alpha", "beta"), routed=True, authority=_authority())
    with serving(built.app) as base:
        with http_client(base, A_TOKEN) as http:
            own = http.post("/mcp/beta", json=INIT_BODY, headers=MCP_HEADERS)
            nowhere = http.post("/mcp/nowhere", json=INIT_BODY, headers=MCP_HEADERS)
        async with mcp_client(f"{base}/mcp/routed", token=A_TOKEN) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            results = {
                tool: await client.call_tool(tool, {"catalog": "beta", **args})
                for tool, args in (
                    ("discover", {"task": "x"}),
                    ("status", {}),
                    ("call", {"server": "s", "tool": "t", "arguments": {}}),
                )
            }
            in_alpha = await client.call_tool("status", {"catalog": "alpha"})
    # beta answers exactly like a catalog that does not exist
    assert (own.status_code, own.json()["error"]["data"]) == (404, {"code": "unknown_catalog"})
    assert own.json()["error"]["message"].replace("beta", "X") == nowhere.json()["error"][
        "message"
    ].replace("nowhere", "X")
    assert sorted(listed) == ["call", "discover", "status"]
    assert {tool: error_code(r) for tool, r in results.items()} == dict.fromkeys(
        ("discover", "status", "call"), "unknown_catalog"
    )
    assert all("beta" not in tool_text(r).replace("'beta'", "") for r in results.values())
    assert json.loads(tool_text(in_alpha))["catalog"] == "alpha"
    # beta's handlers never ran; each refusal was audited once, naming beta and the truth
    assert built.ledger.decisions == [(("alice"), "alpha", "status")]
    refusals = [(a.catalog, a.principal, a.outcome) for a in built.audit.records]
    assert refusals == [
        ("beta", "alice", "catalog_forbidden"),  # POST /mcp/beta (HTTP layer)
        ("", "alice", "unknown_catalog"),  # POST /mcp/nowhere
        *[("beta", "alice", "catalog_forbidden")] * 3,  # the routed calls
    ]


@pytest.mark.promise("P-AUTH-2")
def test_a_principal_that_reaches_no_routed_catalog_cannot_even_initialize_there() -> None:
    built = assemble(("beta", "gamma"), routed=True, authority=_authority())
    with serving(built.app) as base, http_client(base, A_TOKEN) as http:
        routed = http.post("/mcp/routed", json=INIT_BODY, headers=MCP_HEADERS)
    assert routed.status_code == 403


@pytest.mark.promise("P-HTTP-4")
def test_a_session_presented_by_another_principal_is_rejected() -> None:
    built = assemble(("alpha",), authority=_authority())
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    with serving(built.app) as base, http_client(base, A_TOKEN) as alice:
        opened = alice.post("/mcp/alpha", json=INIT_BODY, headers=MCP_HEADERS)
        sid = opened.headers["mcp-session-id"]
        with http_client(base, B_TOKEN) as bob:
            stolen = bob.post(
                "/mcp/alpha", json=ping, headers={**MCP_HEADERS, "mcp-session-id": sid}
            )
        own = alice.post("/mcp/alpha", json=ping, headers={**MCP_HEADERS, "mcp-session-id": sid})
    assert stolen.status_code == 404
    assert own.status_code == 200


def test_health_lists_only_the_catalogs_the_token_reaches_and_none_without_one() -> None:
    built = assemble(("alpha", "beta"), authority=_authority())
    with serving(built.app) as base:
        with http_client(base) as anon:
            public = anon.get("/health").json()
        with http_client(base, A_TOKEN) as alice:
            scoped = alice.get("/health").json()
        with http_client(base, ROOT_TOKEN) as root:
            everything = root.get("/health").json()
    assert public["status"] == "ok" and "catalogs" not in public and public["auth"] == "bearer"
    assert [c["name"] for c in scoped["catalogs"]] == ["alpha"]
    assert [c["name"] for c in everything["catalogs"]] == ["alpha", "beta"]


@pytest.mark.anyio
@pytest.mark.promise("P-AUTH-5")
async def test_the_routed_mount_shows_a_scoped_principal_only_the_catalogs_it_reaches() -> None:
    built = assemble(
        ("alpha", "beta", "gamma"),
        routed=True,
        authority=_authority(),
        proxy_tools={"alpha": ("discover", "status")},
    )
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/routed", token=A_TOKEN) as client:
            init = client.session.initialize_result
            tools = (await client.list_tools()).tools
            hidden_call = await client.call_tool(
                "call", {"catalog": "alpha", "server": "s", "tool": "t"}
            )
            unknown = await client.call_tool("status", {"catalog": "nowhere"})
            implicit = await client.call_tool("status", {})
        async with mcp_client(f"{base}/mcp/routed", token=ROOT_TOKEN) as client:
            root_tools = (await client.list_tools()).tools
    seen = json.dumps([t.model_dump() for t in tools]) + (init.instructions or "" if init else "")
    seen += tool_text(hidden_call) + tool_text(unknown)
    # names, tools and policies of beta/gamma appear nowhere alice can read
    assert "beta" not in seen and "gamma" not in seen
    assert sorted(t.name for t in tools) == ["discover", "status"]  # `call` is only beta/gamma's
    assert all(t.input_schema["properties"]["catalog"]["enum"] == ["alpha"] for t in tools)
    assert error_code(hidden_call) == "unknown_proxy_tool"
    assert error_code(unknown) == "unknown_catalog"
    assert json.loads(tool_text(implicit))["catalog"] == "alpha"  # the only catalog it reaches
    assert sorted(t.name for t in root_tools) == ["call", "discover", "status"]
    assert root_tools[0].input_schema["properties"]["catalog"]["enum"] == ["alpha", "beta", "gamma"]


@pytest.mark.promise("P-AUTH-5")
def test_a_bare_mcp_path_names_only_the_catalogs_the_token_reaches() -> None:
    built = assemble(("alpha", "beta"), authority=_authority())
    with serving(built.app) as base:
        with http_client(base, A_TOKEN) as alice:
            scoped = alice.post("/mcp", json=INIT_BODY, headers=MCP_HEADERS)
        with http_client(base, ROOT_TOKEN) as root:
            everything = root.post("/mcp", json=INIT_BODY, headers=MCP_HEADERS)
    assert (scoped.status_code, everything.status_code) == (400, 400)
    assert "/mcp/alpha" in scoped.text and "beta" not in scoped.text
    assert "/mcp/alpha" in everything.text and "/mcp/beta" in everything.text
