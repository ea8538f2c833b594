"""Every refusal leaves one audit record, at whichever layer refuses (P-AUDIT-1).

Issue 13 finding 8: routed calls refused for a missing or unknown ``catalog``
left no record (13 records for 15 calls), and HTTP-level refusals (401, 403,
413, 421) were logged nowhere, so token guessing left no trace. No record may
carry a secret: never the token that was tried.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from cartograph.config.model import (
    DEFAULT_MAX_BODY_BYTES,
    CatalogConfig,
    Config,
    GatewayConfig,
    HttpConfig,
    IndexConfig,
    ServerConfig,
    TokenConfig,
)
from cartograph.gateway.audit import AuditLog
from cartograph.server.auth import TokenAuthority
from cartograph.server.http import ServedApp, http_app
from tests.helpers.scriptable import HeaderLog, http_upstream
from tests.http.support import (
    INIT_BODY,
    MCP_HEADERS,
    assemble,
    error_code,
    http_client,
    mcp_client,
    serving,
)

TOKEN = "the-real-token-0123456789abcdef0123"
GUESSES = ("guess-one-aaaaaaaaaaaaaaaaaaaa", "guess-two-bbbbbbbbbbbbbbbbbbbbbb")


def _authority() -> TokenAuthority:
    http = HttpConfig(tokens=(TokenConfig(principal="ann", token_env="T", catalogs=("alpha",)),))
    return TokenAuthority.from_config(http, {"T": TOKEN})


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.mark.promise("P-AUDIT-1")
def test_token_guessing_leaves_one_audit_record_per_try_and_never_the_token(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.jsonl"
    built = assemble(("alpha", "beta"), authority=_authority(), audit=AuditLog(log))
    with serving(built.app) as base:
        with http_client(base) as anon:
            statuses = [anon.post("/mcp/alpha", json=INIT_BODY, headers=MCP_HEADERS).status_code]
        for guess in GUESSES:
            with http_client(base, guess) as http:
                statuses.append(
                    http.post("/mcp/alpha", json=INIT_BODY, headers=MCP_HEADERS).status_code
                )
        with http_client(base, TOKEN) as ann:
            statuses.append(ann.post("/mcp/beta", json=INIT_BODY, headers=MCP_HEADERS).status_code)
    built.audit.close()
    records = _lines(log)
    assert statuses == [401, 401, 401, 404]
    assert [(r["http_status"], r["outcome"], r["principal"]) for r in records] == [
        (401, "unauthenticated", None),
        (401, "bad_token", None),
        (401, "bad_token", None),
        (404, "catalog_forbidden", "ann"),
    ]
    assert all(r["path"] in ("/mcp/alpha", "/mcp/beta") for r in records)
    text = log.read_text("utf-8")
    assert not any(secret in text for secret in (TOKEN, *GUESSES))
    assert built.ledger.decisions == []


@pytest.mark.promise("P-AUDIT-1")
def test_foreign_host_foreign_origin_and_oversized_body_are_each_audited_once() -> None:
    built = assemble(("solo",))
    padding = "x" * (DEFAULT_MAX_BODY_BYTES + 1)
    oversized = {**INIT_BODY, "params": {**INIT_BODY["params"], "pad": padding}}
    with serving(built.app) as base, http_client(base) as http:
        statuses = [
            http.post("/mcp", json=INIT_BODY, headers={**MCP_HEADERS, "Host": "evil.example"}),
            http.post("/mcp", json=INIT_BODY, headers={**MCP_HEADERS, "Origin": "http://evil"}),
            http.post("/mcp", json=oversized, headers=MCP_HEADERS),
            http.post("/mcp", json=INIT_BODY, headers={**MCP_HEADERS, "mcp-session-id": "nope"}),
        ]
    assert [r.status_code for r in statuses] == [421, 403, 413, 404]
    assert [(r.http_status, r.outcome, r.catalog) for r in built.audit.records] == [
        (421, "misdirected_host", ""),
        (403, "origin_forbidden", ""),
        (413, "body_too_large", "solo"),
        (404, "unknown_session", "solo"),
    ]
    assert built.per_catalog["solo"].calls == 0


@pytest.mark.anyio
@pytest.mark.promise("P-AUDIT-1")
async def test_routed_calls_without_or_with_an_unknown_catalog_are_audited() -> None:
    built = assemble(("alpha", "beta"), routed=True)
    with serving(built.app) as base:
        async with mcp_client(f"{base}/mcp/routed") as client:
            missing = await client.call_tool("status", {})
            unknown = await client.call_tool("discover", {"catalog": "nope", "task": "t"})
            mistyped = await client.call_tool("status", {"catalog": 7})
    assert [error_code(r) for r in (missing, unknown, mistyped)] == [
        "catalog_required",
        "unknown_catalog",
        "unknown_catalog",
    ]
    records = [(r.catalog, r.proxy_tool, r.outcome, r.arguments) for r in built.audit.records]
    assert records == [
        ("routed", "status", "catalog_required", {}),
        ("routed", "discover", "unknown_catalog", {"task": "string"}),
        ("routed", "status", "unknown_catalog", {}),
    ]
    assert built.ledger.audits == []  # no catalog ran them, so no catalog audited them


@pytest.fixture
def upstream_url() -> Iterator[str]:
    with serving(http_upstream(HeaderLog())) as base:
        yield f"{base}/mcp"


@pytest.fixture
async def served(tmp_path: Path, upstream_url: str) -> AsyncIterator[tuple[ServedApp, str, Path]]:
    log = tmp_path / "audit.jsonl"
    config = Config(
        state_dir=tmp_path / "state",
        servers=(ServerConfig(name="echo", transport="streamable-http", url=upstream_url),),
        index=IndexConfig(embedder="fake"),
        gateway=GatewayConfig(audit_log=log),
        catalogs=(
            CatalogConfig(name="alpha", servers=("echo",)),
            CatalogConfig(name="beta", servers=("echo",)),
        ),
        http=HttpConfig(mount_mode="routed"),
    )
    async with http_app(config, unsafe_throwaway_key=True, environ={}) as app:
        with serving(app.app) as base:
            yield app, base, log


@pytest.mark.anyio
@pytest.mark.promise("P-AUDIT-1")
async def test_fifteen_routed_calls_with_two_refused_for_their_catalog_leave_fifteen_records(
    served: tuple[ServedApp, str, Path],
) -> None:
    _, base, log = served
    echo = {"server": "echo", "tool": "echo", "arguments": {"message": "hi"}}
    async with mcp_client(f"{base}/mcp/routed") as client:
        for index in range(13):
            catalog = ("alpha", "beta")[index % 2]
            result = await client.call_tool("call", {"catalog": catalog, **echo})
            assert not result.is_error
        refused = [
            await client.call_tool("call", echo),
            await client.call_tool("call", {"catalog": "gamma", **echo}),
        ]
    assert [error_code(r) for r in refused] == ["catalog_required", "unknown_catalog"]
    records = _lines(log)
    assert len(records) == 15
    assert sorted(r["outcome"] for r in records)[:2] == ["catalog_required", "ok"]
    assert [r["outcome"] for r in records if r["catalog"] == "routed"] == [
        "catalog_required",
        "unknown_catalog",
    ]
