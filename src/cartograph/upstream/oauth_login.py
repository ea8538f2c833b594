"""`cartograph auth login`: the one interactive OAuth step, on a loopback redirect.

Apart from :mod:`cartograph.upstream.oauth` (which the transports use while
serving) because it opens a session itself: the login drives the SDK's flow
by connecting once, with a redirect handler that shows the URL and a callback
that waits for the browser to come back to ``127.0.0.1:<redirect_port>``.
"""

from __future__ import annotations

import webbrowser
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from anyio.abc import SocketStream
from mcp.shared.auth import AuthorizationCodeResult

from cartograph.config.model import ServerConfig
from cartograph.errors import UpstreamError
from cartograph.upstream.oauth import (
    CALLBACK_PATH,
    TokenFile,
    oauth_auth,
    redirect_uri,
    token_file,
)
from cartograph.upstream.session import UpstreamSession

LOGIN_TIMEOUT: Final = 300.0
"""How long `auth login` waits for the browser to come back to the loopback port."""
MAX_CALLBACK_BYTES: Final = 16 * 1024

Announce = Callable[[str], None]
"""Shows the operator a line (the authorization URL); never given a token."""


async def login(cfg: ServerConfig, *, announce: Announce, open_browser: bool = True) -> None:
    """Run the browser flow once: registration, consent, code exchange; tokens to the store.

    The loopback listener is up before the URL is shown, so the redirect cannot
    arrive too early. Raises :class:`UpstreamError` when the flow fails.
    """
    store = token_file(cfg)  # a pre-registered client's secret is read (or refused) here
    _drop_stale_registration(store, cfg)
    received: list[AuthorizationCodeResult] = []
    arrived = anyio.Event()

    async def redirect(url: str) -> None:
        announce(url)
        if open_browser:
            webbrowser.open(url)

    async def callback() -> AuthorizationCodeResult:
        with anyio.fail_after(LOGIN_TIMEOUT):
            await arrived.wait()
        return received[0]

    async def on_code(result: AuthorizationCodeResult) -> None:
        received.append(result)
        arrived.set()

    auth = oauth_auth(cfg, redirect=redirect, callback=callback)
    listener = await anyio.create_tcp_listener(
        local_host="127.0.0.1", local_port=cfg.oauth.redirect_port
    )
    failure: UpstreamError | None = None
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, _callback_handler(on_code))
        try:
            await _connect_once(cfg, auth)
        except UpstreamError as exc:  # raised as itself, not inside the group's ExceptionGroup
            failure = exc
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def _connect_once(cfg: ServerConfig, auth: httpx2.Auth) -> None:
    """Connect and list once: the SDK runs the whole OAuth flow on the first 401."""
    session = await UpstreamSession.open(
        cfg.model_copy(update={"connect_timeout": LOGIN_TIMEOUT}), auth=auth
    )
    try:
        await session.list_tools()
    finally:
        await session.aclose()


def _drop_stale_registration(store: TokenFile, cfg: ServerConfig) -> None:
    """Drop what this login cannot use, so that it starts from what the config says.

    A stored client for another redirect URI (the port changed), or a metadata document
    at another URL, is dropped: the login gets a client afresh. Tokens obtained by
    another client than the one this login uses (``oauth.client_id`` was set, changed
    or removed) are dropped too: no other client can refresh them.
    """
    data = store.read()
    client = data.get("client")
    if isinstance(client, dict) and (
        redirect_uri(cfg) not in (client.get("redirect_uris") or [])
        or (
            data.get("client_kind") == "client-id-metadata-document"
            and client.get("client_id") != cfg.oauth.client_metadata_url
        )
    ):
        store.forget_client()
        data = store.read()
    using = cfg.oauth.client_id or store.stored_registration(data)[1]
    if data.get("tokens") and data.get("client_id") != using:
        store.forget_tokens()


def _callback_handler(
    on_code: Callable[[AuthorizationCodeResult], Awaitable[None]],
) -> Callable[[SocketStream], Awaitable[None]]:
    """A one-route HTTP server for the redirect: ``GET /callback?code=…&state=…``."""

    async def handle(stream: SocketStream) -> None:
        async with stream:
            head = b""
            with anyio.move_on_after(10):
                while b"\r\n\r\n" not in head and len(head) < MAX_CALLBACK_BYTES:
                    chunk = await stream.receive(4096)
                    if not chunk:
                        break
                    head += chunk
            result = _parse_callback(head)
            body = (
                "Cartograph: authorized. You can close this window."
                if result is not None
                else "Cartograph: this is not an authorization redirect."
            )
            status = "200 OK" if result is not None else "400 Bad Request"
            await stream.send(
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n{body}".encode()
            )
            if result is not None:
                await on_code(result)

    return handle


def _parse_callback(head: bytes) -> AuthorizationCodeResult | None:
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != "GET":
        return None
    target = urlsplit(parts[1])
    query = parse_qs(target.query)
    if target.path != CALLBACK_PATH or "code" not in query:
        return None
    return AuthorizationCodeResult(
        code=query["code"][0],
        state=query.get("state", [None])[0],
        iss=query.get("iss", [None])[0],
    )
