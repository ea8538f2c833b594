"""Upstream OAuth 2.1 against a real local authorization server, login to serve to refresh.

The upstream (tests/helpers/oauth_upstream.py) is an MCP server with its own
OAuth provider built on the SDK's mcp.server.auth, on 127.0.0.1. The browser
step is driven by an HTTP client that follows the authorization redirect to
`cartograph auth login`'s loopback port; everything else is the SDK's client
(registration, PKCE, token exchange, refresh) inside Cartograph.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from cartograph.cli.app import EXIT_CONFIG
from cartograph.config.loader import load_config
from cartograph.config.model import ServerConfig
from cartograph.errors import ConfigError, OAuthLoginRequired
from cartograph.upstream.oauth import TokenFile, oauth_auth
from cartograph.upstream.session import UpstreamSession
from tests.helpers.serving import free_port, wait_for
from tests.upstream.oauth_support import (
    CLI,
    UPSTREAM,
    answers,
    call_through_serve,
    login,
    write_config,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The OAuth-protected MCP server on a free loopback port; yields its URL and grant log."""
    port, log = free_port(), tmp_path / "grants.jsonl"
    process = subprocess.Popen(
        [sys.executable, str(UPSTREAM), "--port", str(port), "--log", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: answers(f"{base}/.well-known/oauth-authorization-server"), 30)
        yield f"{base}/mcp", log
    finally:
        process.kill()
        process.wait(timeout=10)


def grants(log: Path) -> list[str]:
    return [json.loads(line)["event"] for line in log.read_text().splitlines()]


@pytest.mark.anyio
@pytest.mark.promise("P-FS-1")
@pytest.mark.promise("P-LOG-1")
async def test_login_then_serve_calls_through_and_refreshes_an_expired_token(
    tmp_path: Path, upstream: tuple[str, Path]
) -> None:
    url, log = upstream
    config_path = write_config(tmp_path, url)
    config = load_config(config_path)
    server = config.servers[0]

    with pytest.raises(OAuthLoginRequired) as before:  # serve never opens a browser
        await UpstreamSession.open(server)
    assert before.value.code == "oauth_login_required"

    printed, err = login(config_path)
    assert grants(log) == ["register", "authorization_code"]
    store = TokenFile(tmp_path / "state" / "oauth" / "saas.json")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    first = await store.get_tokens()
    assert first is not None and first.refresh_token
    assert first.access_token not in printed + err  # never shown
    assert first.refresh_token not in printed + err

    # An hour later: the stored token has expired. serve must refresh, not ask for a browser.
    data = store.read()
    data["expires_at"] = time.time() - 60
    store.path.write_text(json.dumps(data))
    assert await call_through_serve(config_path) == "authorized"
    assert grants(log) == ["register", "authorization_code", "refresh_token"]
    second = await store.get_tokens()
    assert second is not None and second.access_token != first.access_token
    assert (store.expires_at() or 0) > time.time()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600

    # The server ends the token early (revoked): the 401 is answered by a refresh too.
    client = await store.get_client_info()
    assert client is not None
    async with httpx2.AsyncClient(timeout=10) as http:
        revoked = await http.post(
            url.replace("/mcp", "/revoke"),
            # the SDK's revocation model requires the key even for a public client
            data={"token": second.access_token, "client_id": client.client_id, "client_secret": ""},
        )
    assert revoked.status_code == 200
    assert await call_through_serve(config_path) == "authorized"
    assert grants(log)[-2:] == ["revoke", "refresh_token"]


def test_oauth_on_a_stdio_server_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "cartograph.toml"
    path.write_text('[servers.local]\ncommand = "true"\nauth = "oauth"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert refused.value.code == "oauth_needs_http"


def test_an_oauth_server_built_without_the_loader_has_no_token_store() -> None:
    server = ServerConfig(name="saas", url="http://127.0.0.1:9/mcp", auth="oauth")
    with pytest.raises(ConfigError) as refused:
        oauth_auth(server.model_copy(update={"transport": "streamable-http"}))
    assert refused.value.code == "oauth_no_store"


def test_a_corrupt_token_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    store = TokenFile(tmp_path / "saas.json")
    store.path.write_text("{not json")
    with pytest.raises(ConfigError) as refused:
        store.read()
    assert refused.value.code == "oauth_store_corrupt"


def test_auth_login_names_only_oauth_servers(tmp_path: Path) -> None:
    path = tmp_path / "cartograph.toml"
    path.write_text('[servers.plain]\nurl = "http://127.0.0.1:9/mcp"\n')
    done = subprocess.run(
        [*CLI, "auth", "login", "plain", "--config", str(path)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert done.returncode == EXIT_CONFIG and "(oauth_not_configured)" in done.stderr
