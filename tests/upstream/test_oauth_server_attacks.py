"""An OAuth upstream whose authorization server is down or answers garbage: named, coded, quiet.

The resource server is the real one of ``tests/helpers/oauth_upstream.py``, started with
``--issuer`` naming another authorization server in its protected-resource metadata: a
port nothing listens on, or a local HTTP server that answers 503, non-JSON, or JSON that
is not OAuth metadata. The stored token is one the resource server refuses, so every
connect runs the SDK's flow up to that server. Before issue 24 the failure read
``cannot reach the endpoint`` (of a resource server that answered), a ``call`` said
``unknown_tool``, ``auth login`` printed an ``ExceptionGroup``, and stderr carried the SDK's
tracebacks and "The current task is not holding this lock". Now each names the
authorization server and the step (``oauth_unreachable``, ``oauth_bad_response``), and
no traceback is written anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.helpers.serving import free_port, wait_for
from tests.upstream.oauth_support import CLI, UPSTREAM, write_config

pytestmark = pytest.mark.integration

BEHAVIOURS = {
    "closed": None,  # nothing listens on the port
    "http_503": (503, b"upstream connect error"),
    "not_json": (200, b"<html><body>Welcome to nginx!</body></html>"),
    "json_not_metadata": (200, b'{"hello": "world"}'),
}
EXPECTED = {
    "closed": "oauth_unreachable",
    "http_503": "oauth_unreachable",
    "not_json": "oauth_bad_response",
    "json_not_metadata": "oauth_bad_response",
}
TRACEBACKS = ("Traceback", "not holding this lock", "ExceptionGroup")


@contextmanager
def authorization_server(behaviour: str) -> Iterator[str]:
    """The broken authorization server's origin: a closed port, or one fixed bad answer."""
    answer = BEHAVIOURS[behaviour]
    if answer is None:
        yield f"http://127.0.0.1:{free_port()}"
        return
    status, body = answer

    class Bad(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads what Cartograph says, not this server."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Bad)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


@contextmanager
def resource_server(tmp_path: Path, issuer: str) -> Iterator[str]:
    """The OAuth-protected MCP server naming ``issuer`` as its authorization server."""
    port = free_port()
    log = tmp_path / "grants.jsonl"
    command = [sys.executable, str(UPSTREAM), "--port", str(port), "--log", str(log)]
    process = subprocess.Popen(
        [*command, "--issuer", issuer], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: _answers(f"{base}/.well-known/oauth-protected-resource/mcp"), 30)
        yield f"{base}/mcp"
    finally:
        process.kill()
        process.wait(timeout=10)


def _answers(url: str) -> bool:
    try:
        return httpx2.get(url, timeout=1.0).status_code == 200
    except httpx2.TransportError:
        return False


def refused_token(tmp_path: Path) -> None:
    """A stored token (and refresh token) the resource server does not know."""
    store = tmp_path / "state" / "oauth" / "saas.json"
    store.parent.mkdir(parents=True, mode=0o700)
    os.chmod(tmp_path / "state", 0o700)
    tokens = {"access_token": "stale", "token_type": "Bearer", "refresh_token": "stale-refresh"}
    client = {"client_id": "gone", "redirect_uris": ["http://127.0.0.1:9/callback"]}
    data = {"tokens": tokens, "expires_at": time.time() + 3600, "client": client}
    store.write_text(json.dumps(data))
    os.chmod(store, 0o600)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=dict(os.environ), timeout=120
    )


def assert_quiet(stderr: str) -> None:
    for mark in TRACEBACKS:
        assert mark not in stderr, stderr


@pytest.mark.parametrize("behaviour", sorted(BEHAVIOURS))
def test_attack_a_broken_authorization_server_is_named_by_servers(
    tmp_path: Path, behaviour: str
) -> None:
    with authorization_server(behaviour) as issuer, resource_server(tmp_path, issuer) as url:
        config = write_config(tmp_path, url)
        refused_token(tmp_path)
        done = cli("servers", "--json", "--config", str(config))
    assert_quiet(done.stderr)
    (server,) = json.loads(done.stdout)["servers"]
    error = server["error"]
    assert error["code"] == EXPECTED[behaviour]
    assert error["authorization_server"] == issuer
    assert issuer in error["message"] and "metadata request" in error["message"]


def test_attack_authorization_server_down_at_login_is_one_coded_line(tmp_path: Path) -> None:
    with authorization_server("closed") as issuer, resource_server(tmp_path, issuer) as url:
        config = write_config(tmp_path, url)
        done = cli("auth", "login", "saas", "--no-browser", "--config", str(config))
    assert done.returncode != 0
    assert_quiet(done.stderr)
    assert "error (oauth_unreachable)" in done.stderr and issuer in done.stderr


@pytest.mark.anyio
async def test_attack_garbage_authorization_server_is_named_by_serve_status(
    tmp_path: Path,
) -> None:
    log = tmp_path / "serve.log"
    with authorization_server("not_json") as issuer, resource_server(tmp_path, issuer) as url:
        config = write_config(tmp_path, url)
        refused_token(tmp_path)
        params = StdioServerParameters(
            command=sys.executable,
            args=[*CLI[1:], "serve", "--unsafe-throwaway-key", "--config", str(config)],
            env=dict(os.environ),
        )
        with log.open("w") as errlog, anyio.fail_after(90):
            async with Client(stdio_client(params, errlog)) as client:
                status = await client.call_tool("status", {})
    (problem,) = json.loads(status.content[0].text)["problems"]  # type: ignore[union-attr]
    assert problem["server"] == "saas" and problem["health"] == "down"
    assert problem["error"].startswith(
        f"oauth_bad_response: upstream 'saas': its OAuth authorization server {issuer}"
    )
    assert_quiet(log.read_text())
