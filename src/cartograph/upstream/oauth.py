"""Upstream OAuth 2.1 for HTTP servers: the SDK's client provider over a private token file.

A server configured with ``auth = "oauth"`` gets the official SDK's
:class:`~mcp.client.auth.OAuthClientProvider` as its HTTP client's auth:
protected-resource and authorization-server metadata discovery, dynamic
client registration, authorization code with PKCE, and refresh are the
SDK's. What Cartograph adds:

* :class:`TokenFile`, the SDK's ``TokenStorage`` over one JSON file per server
  in the state directory (0600, written atomically, never logged), which also
  keeps the access token's absolute expiry — the SDK keeps it only in memory,
  so without it a restarted proxy would send an expired token, get a 401 and
  need a browser instead of refreshing;
* ``oauth_login.login``, the one interactive step (``cartograph auth login SERVER``):
  it prints the authorization URL (and opens a browser unless told not to),
  receives the redirect on a loopback port, and lets the SDK finish the
  exchange; ``serve`` never opens a browser and instead refuses with
  ``oauth_login_required`` naming that command.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, BaseModel, ValidationError

from cartograph import error_codes as codes
from cartograph.config.model import ServerConfig
from cartograph.errors import ConfigError, OAuthLoginRequired, StateFileError
from cartograph.fsutil import PRIVATE_FILE_MODE, atomic_write_text, read_bounded

logger = logging.getLogger(__name__)

CALLBACK_PATH: Final = "/callback"
MAX_TOKEN_FILE_BYTES: Final = 1024 * 1024
"""A token file holds a few tokens and one client registration: kilobytes."""


def redirect_uri(cfg: ServerConfig) -> str:
    return f"http://127.0.0.1:{cfg.oauth.redirect_port}{CALLBACK_PATH}"


def store_path(cfg: ServerConfig) -> Path:
    if cfg.oauth.store is None:
        raise ConfigError(
            f"server {cfg.name!r}: auth = 'oauth' needs a token store; load the config from "
            "a file (the loader puts it in the state directory) or set oauth.store",
            code=codes.OAUTH_NO_STORE,
            server=cfg.name,
        )
    return cfg.oauth.store


class TokenFile:
    """The SDK's ``TokenStorage`` over one private JSON file (tokens, expiry, registration)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(read_bounded(self.path, MAX_TOKEN_FILE_BYTES))
        except (OSError, ValueError, StateFileError) as exc:
            raise ConfigError(
                f"{self.path}: the OAuth token file is unreadable ({type(exc).__name__}); "
                "delete it and run `cartograph auth login` again",
                code=codes.OAUTH_STORE_CORRUPT,
                file=str(self.path),
            ) from None
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        atomic_write_text(self.path, json.dumps(data, indent=2), mode=PRIVATE_FILE_MODE)

    def expires_at(self) -> float | None:
        value = self.read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> OAuthToken | None:
        raw = self.read().get("tokens")
        return _parsed(OAuthToken, raw, self.path)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = self.read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        self._write(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self.read().get("client")
        return _parsed(OAuthClientInformationFull, raw, self.path)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        data = self.read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)

    def forget_client(self) -> None:
        """Drop the registration (and its tokens): the next login registers afresh."""
        if self.path.exists():
            self._write({})


_M = TypeVar("_M", bound=BaseModel)


def _parsed(model: type[_M], raw: Any, path: Path) -> _M | None:
    if raw is None:
        return None
    try:
        return model.model_validate(raw)
    except ValidationError:
        raise ConfigError(
            f"{path}: the OAuth token file does not hold what Cartograph wrote; delete it "
            "and run `cartograph auth login` again",
            code=codes.OAUTH_STORE_CORRUPT,
            file=str(path),
        ) from None


class _Provider(OAuthClientProvider):
    """The SDK's provider, with the access token's expiry restored from the token file."""

    def __init__(self, store: TokenFile, **options: Any) -> None:
        super().__init__(storage=store, **options)
        self._store = store

    async def _initialize(self) -> None:
        await super()._initialize()
        # The SDK keeps a token's expiry only in memory: restore it, so an expired token is
        # refreshed before it is sent instead of drawing a 401 (and a browser login).
        self.context.token_expiry_time = self._store.expires_at()

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, plus one refresh when a token that looked valid draws a 401.

        A server may end a token before its ``expires_in`` (revoked, rotated, a
        restart); the SDK answers any 401 with the full browser flow, which a
        proxy cannot run. With a refresh token at hand, refresh first.
        """
        flow = super()._auth_flow(request)
        outgoing = await flow.__anext__()
        retried = False
        while True:
            response = yield outgoing
            if (
                response.status_code == 401
                and outgoing is request
                and not retried
                and self.context.is_token_valid()
                and self.context.can_refresh_token()
            ):
                retried = True
                await flow.aclose()
                self.context.token_expiry_time = time.time() - 1  # treat it as expired
                flow = super()._auth_flow(request)
                outgoing = await flow.__anext__()
                continue
            try:
                outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return


def client_metadata(cfg: ServerConfig) -> OAuthClientMetadata:
    """What dynamic client registration asks for: a public client on a loopback redirect."""
    return OAuthClientMetadata(
        client_name=cfg.oauth.client_name,
        redirect_uris=[AnyUrl(redirect_uri(cfg))],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",  # noqa: S106 - a public client: PKCE, no secret
        scope=" ".join(cfg.oauth.scopes) or None,
    )


def oauth_auth(
    cfg: ServerConfig,
    *,
    redirect: Callable[[str], Awaitable[None]] | None = None,
    callback: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None,
) -> httpx2.Auth:
    """The httpx auth for ``cfg``; without ``redirect`` (serving) a needed login is refused.

    Serving with no stored token is refused before any request, so ``serve``
    never registers a client it cannot use.
    """
    assert cfg.url is not None
    store = TokenFile(store_path(cfg))
    if redirect is None and not store.read().get("tokens"):
        raise _login_required(cfg)

    async def needs_login(_url: str) -> None:
        raise _login_required(cfg)

    async def no_callback() -> AuthorizationCodeResult:
        raise _login_required(cfg)

    return _Provider(
        store,
        server_url=cfg.url,
        client_metadata=client_metadata(cfg),
        redirect_handler=redirect or needs_login,
        callback_handler=callback or no_callback,
    )


def _login_required(cfg: ServerConfig) -> OAuthLoginRequired:
    return OAuthLoginRequired(
        f"upstream {cfg.name!r} needs an OAuth login: run `cartograph auth login {cfg.name}`",
        server=cfg.name,
    )


def token_status(cfg: ServerConfig) -> dict[str, Any]:
    """What `auth status` shows: whether a token is stored and when it expires; no values."""
    data = TokenFile(store_path(cfg)).read()
    tokens = data.get("tokens") or {}
    expires_at = data.get("expires_at")
    return {
        "server": cfg.name,
        "logged_in": bool(tokens.get("access_token")),
        "refreshable": bool(tokens.get("refresh_token")),
        "expires_in": round(expires_at - time.time())
        if isinstance(expires_at, int | float)
        else None,
        "registered": bool(data.get("client")),
        "store": str(store_path(cfg)),
    }
