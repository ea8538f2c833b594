"""One token, one principal, one scope (P-AUTH-4): the issue-13 scope escalation, closed.

The attack: two ``[[http.tokens]]`` entries share a principal name, one scoped to
``research`` (the attacker's token), one to ``ops`` and ``dev``. The per-call check
looked the principal up by name and found the last entry's scope, so the research
token ran ``status``, ``discover`` and ``call`` in ``ops`` and ``dev`` through
``/mcp/routed``. Now such a config never loads, never starts, and a principal's
scope is exactly the one written for it on every mount.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cartograph.config.loader import load_config
from cartograph.config.model import (
    CatalogConfig,
    Config,
    HttpConfig,
    IndexConfig,
    ServerConfig,
    TokenConfig,
)
from cartograph.errors import ConfigError
from cartograph.gateway.audit import kept_records
from cartograph.server.auth import Principal, TokenAuthority
from cartograph.server.http import http_app
from tests.helpers.scriptable import HeaderLog, http_upstream
from tests.http.support import error_code, http_client, mcp_client, serving, tool_text

RESEARCH_TOKEN = "research-only-token-0123456789abcdef"
OPS_TOKEN = "ops-and-dev-token-0123456789abcdef00"
ENV = {"RESEARCH_TOKEN": RESEARCH_TOKEN, "OPS_TOKEN": OPS_TOKEN}
CATALOGS = ("research", "ops", "dev")

ATTACK_TOML = """
[servers.echo]
url = "http://127.0.0.1:9/mcp"

[[catalogs]]
name = "research"
servers = ["echo"]
[[catalogs]]
name = "ops"
servers = ["echo"]
[[catalogs]]
name = "dev"
servers = ["echo"]

[http]
mount_mode = "routed"
[[http.tokens]]
principal = "mallory"
token_env = "RESEARCH_TOKEN"
catalogs = ["research"]
[[http.tokens]]
principal = "mallory"
token_env = "OPS_TOKEN"
catalogs = ["ops", "dev"]
"""


def _load_error(tmp_path: Path, text: str) -> ConfigError:
    path = tmp_path / "cartograph.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=ENV)
    return caught.value


@pytest.mark.promise("P-AUTH-4")
def test_two_token_entries_for_one_principal_are_refused_at_load_naming_both(
    tmp_path: Path,
) -> None:
    error = _load_error(tmp_path, ATTACK_TOML)
    assert error.code == "duplicate_principal"
    assert "#1 (principal 'mallory', $RESEARCH_TOKEN)" in error.message
    assert "#2 (principal 'mallory', $OPS_TOKEN)" in error.message
    assert RESEARCH_TOKEN not in error.message and OPS_TOKEN not in error.message


@pytest.mark.promise("P-AUTH-4")
def test_one_token_variable_written_for_two_principals_is_refused_at_load(
    tmp_path: Path,
) -> None:
    head, _, _ = ATTACK_TOML.partition("[[http.tokens]]")
    text = (
        head
        + '[[http.tokens]]\nprincipal = "mallory"\ntoken_env = "RESEARCH_TOKEN"\n'
        + '[[http.tokens]]\nprincipal = "trent"\ntoken_env = "RESEARCH_TOKEN"\n'
    )
    error = _load_error(tmp_path, text)
    assert error.code == "duplicate_token"
    assert "$RESEARCH_TOKEN" in error.message and "'trent'" in error.message


@pytest.mark.promise("P-AUTH-4")
def test_two_variables_holding_the_same_token_are_refused_at_start() -> None:
    http = HttpConfig(
        tokens=(
            TokenConfig(principal="mallory", token_env="A", catalogs=("research",)),
            TokenConfig(principal="trent", token_env="B", catalogs=("ops",)),
        )
    )
    with pytest.raises(ConfigError) as caught:
        TokenAuthority.from_config(http, {"A": RESEARCH_TOKEN, "B": RESEARCH_TOKEN})
    assert caught.value.code == "duplicate_token"
    assert "$A" in caught.value.message and "$B" in caught.value.message
    assert RESEARCH_TOKEN not in caught.value.message


@pytest.mark.promise("P-AUTH-4")
def test_an_authority_built_directly_refuses_a_repeated_principal() -> None:
    with pytest.raises(ConfigError) as caught:
        TokenAuthority(
            [
                (RESEARCH_TOKEN, Principal("mallory", frozenset({"research"}))),
                (OPS_TOKEN, Principal("mallory", frozenset({"ops", "dev"}))),
            ]
        )
    assert caught.value.code == "duplicate_principal"


@pytest.fixture
def upstream_url() -> Iterator[str]:
    with serving(http_upstream(HeaderLog())) as base:
        yield f"{base}/mcp"


def _config(state: Path, url: str, tokens: tuple[TokenConfig, ...]) -> Config:
    return Config(
        state_dir=state,
        servers=(ServerConfig(name="echo", transport="streamable-http", url=url),),
        index=IndexConfig(embedder="fake"),
        catalogs=tuple(CatalogConfig(name=n, servers=("echo",)) for n in CATALOGS),
        http=HttpConfig(mount_mode="routed", tokens=tokens),
    )


@pytest.mark.anyio
@pytest.mark.promise("P-AUTH-4")
async def test_scope_escalation_via_a_duplicate_principal_is_refused_and_scope_holds_end_to_end(
    tmp_path: Path, upstream_url: str
) -> None:
    attack = (
        TokenConfig(principal="mallory", token_env="RESEARCH_TOKEN", catalogs=("research",)),
        TokenConfig(principal="mallory", token_env="OPS_TOKEN", catalogs=("ops", "dev")),
    )
    # The attack config cannot be written as a Config ...
    with pytest.raises(ConfigError) as at_load:
        _config(tmp_path / "a", upstream_url, attack)
    assert at_load.value.code == "duplicate_principal"
    # ... and a Config smuggled past validation still cannot start serving.
    smuggled = _config(tmp_path / "b", upstream_url, ()).model_copy(
        update={"http": HttpConfig.model_construct(mount_mode="routed", tokens=attack)}
    )
    with pytest.raises(ConfigError) as at_start:
        async with http_app(smuggled, unsafe_throwaway_key=True, environ=ENV):
            pass
    assert at_start.value.code == "duplicate_principal"

    # Written as two principals, the research token is held to research on every path.
    honest = (attack[0], attack[1].model_copy(update={"principal": "olivia"}))
    config = _config(tmp_path / "c", upstream_url, honest)
    echo = {"server": "echo", "tool": "echo", "arguments": {"message": "x"}}
    async with http_app(config, unsafe_throwaway_key=True, environ=ENV) as app:
        with serving(app.app) as base:
            async with mcp_client(f"{base}/mcp/routed", token=RESEARCH_TOKEN) as client:
                attempts = {
                    (catalog, tool): await client.call_tool(tool, {"catalog": catalog, **args})
                    for catalog in ("ops", "dev")
                    for tool, args in (
                        ("status", {}),
                        ("discover", {"task": "echo a message"}),
                        ("call", echo),
                    )
                }
                own = await client.call_tool("call", {"catalog": "research", **echo})
            with http_client(base, RESEARCH_TOKEN) as http:
                direct = [http.post(f"/mcp/{c}", json={}).status_code for c in ("ops", "dev")]
    # ops and dev answer as catalogs that do not exist (P-AUTH-5); the audit says the truth
    assert {key: error_code(r) for key, r in attempts.items()} == dict.fromkeys(
        attempts, "unknown_catalog"
    )
    assert not own.is_error and "x" in tool_text(own)
    assert direct == [404, 404]
    assert app.audit is not None
    refused = [(r.catalog, r.principal, r.outcome) for r in kept_records(app.audit)]
    assert refused == [(c, "mallory", "catalog_forbidden") for c, _ in attempts] + [
        ("ops", "mallory", "catalog_forbidden"),
        ("dev", "mallory", "catalog_forbidden"),
    ]
