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
  ``oauth_login_required`` naming that command;
* one coded error naming the authorization server and the step that failed when
  that server is down (``oauth_unreachable``: no connection, or an HTTP 5xx) or
  answers something that is not OAuth (``oauth_bad_response``), where the SDK
  raised whatever its parser hit and logged it with a traceback. The SDK's
  tracebacks are kept out of the log (:class:`_NoSdkTracebacks`), and its flow is
  always closed in the task that runs it: left to the garbage collector, it
  released its lock from another task and printed "The current task is not
  holding this lock" (issue 24).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, BaseModel, ValidationError

from cartograph import error_codes as codes
from cartograph.config.model import ServerConfig
from cartograph.errors import (
    ConfigError,
    OAuthLoginRequired,
    StateFileError,
    UpstreamUnavailable,
)
from cartograph.fsutil import PRIVATE_FILE_MODE, atomic_write_text, read_bounded

logger = logging.getLogger(__name__)

CALLBACK_PATH: Final = "/callback"
MAX_TOKEN_FILE_BYTES: Final = 1024 * 1024
"""A token file holds a few tokens and one client registration: kilobytes."""
SDK_OAUTH_LOGGER: Final = "mcp.client.auth.oauth2"


class _NoSdkTracebacks(logging.Filter):
    """The SDK logs an OAuth failure with its traceback (``logger.exception``), then raises it.

    The raise becomes one coded error that says what failed, so the log record
    keeps its one line, demoted to DEBUG (``--debug`` shows it), and loses the traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return True


logging.getLogger(SDK_OAUTH_LOGGER).addFilter(_NoSdkTracebacks())

_STEPS: Final[tuple[tuple[str, str, type[BaseModel]], ...]] = (
    (
        "oauth-protected-resource",
        "the protected-resource metadata request",
        ProtectedResourceMetadata,
    ),
    ("oauth-authorization-server", "the metadata request", OAuthMetadata),
    ("openid-configuration", "the metadata request", OAuthMetadata),
    ("/register", "client registration", OAuthClientInformationFull),
    ("/token", "the token request", OAuthToken),
)
"""What each authorization-server request is called, by a part of its path, and the
model a 200 answer to it must fit."""


def auth_server_error(server: str, code: str, url: httpx2.URL, what: str) -> UpstreamUnavailable:
    """The coded error for an authorization-server request of ``server`` that failed: which
    server (its origin), which step (from the path) and ``what`` went wrong."""
    origin = f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"
    step = next((name for part, name, _model in _STEPS if part in url.path), "a request")
    fix = (
        "check that it is up and reachable from here, then retry"
        if code == codes.OAUTH_UNREACHABLE
        else "check that the upstream names the right authorization server, then retry"
    )
    return UpstreamUnavailable(
        f"upstream {server!r}: its OAuth authorization server {origin} failed {step} "
        f"({url.path}): {what}; {fix}",
        code=code,
        server=server,
        authorization_server=origin,
    )


async def _fault_of(request: httpx2.Request, response: httpx2.Response) -> tuple[str, str] | None:
    """``(code, what)`` when an authorization-server answer is no OAuth answer at all.

    The SDK reads a malformed answer as "not here" and goes on to a login it cannot
    finish, or raises whatever its parser hit; either way the operator learns nothing.
    """
    if response.status_code >= 500:
        return codes.OAUTH_UNREACHABLE, f"it answered HTTP {response.status_code}"
    if response.status_code != 200:
        return None  # a 4xx is an OAuth answer: the SDK reads it (try the next URL, re-login)
    try:
        data = json.loads(await response.aread())
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return codes.OAUTH_BAD_RESPONSE, "it answered HTTP 200 with something that is not JSON"
    model = next((m for part, _name, m in _STEPS if part in request.url.path), None)
    if model is not None:
        try:
            model.model_validate(data)
        except ValidationError as exc:
            fields = sorted({".".join(map(str, e["loc"])) or "(root)" for e in exc.errors()})
            return codes.OAUTH_BAD_RESPONSE, (
                f"its answer is JSON but not {model.__name__} (wrong or missing: "
                f"{', '.join(fields[:5])})"
            )
    return None


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

    def __init__(self, store: TokenFile, server: str, **options: Any) -> None:
        super().__init__(storage=store, **options)
        self._store = store
        self._server = server
        self._endpoint = httpx2.URL(self.context.server_url)
        self._fault: UpstreamUnavailable | None = None

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

        Each answer of the authorization server is looked at before the SDK parses
        it, so that a failure is raised as the coded error naming that server
        (:func:`auth_server_error`). The SDK's flow holds a lock across its
        requests: it is closed here, however this flow ends, in this task.
        """
        self._fault = None
        flow = super()._auth_flow(request)
        try:
            outgoing = await self._step(flow.__anext__(), request)
            retried = False
            while True:
                response = yield outgoing
                if outgoing is not request and self._fault is None:
                    found = await _fault_of(outgoing, response)
                    if found is not None:
                        code, what = found
                        self._fault = auth_server_error(self._server, code, outgoing.url, what)
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
                    outgoing = await self._step(flow.__anext__(), request)
                    continue
                try:
                    outgoing = await self._step(flow.asend(response), outgoing)
                except StopAsyncIteration:
                    return
        finally:
            await flow.aclose()

    async def _step(self, step: Awaitable[httpx2.Request], last: httpx2.Request) -> httpx2.Request:
        """The SDK flow's next request, given the answer to ``last``; a failure to go on
        is raised as the authorization server's when one of its answers was the cause."""
        try:
            return await step
        except (OAuthLoginRequired, OAuthFlowError, ValueError) as exc:  # ValidationError too
            if self._fault is not None:  # a login is needed because the server failed
                raise self._fault from None
            if isinstance(exc, OAuthLoginRequired) or last.url == self._endpoint:
                raise
            raise auth_server_error(
                self._server, codes.OAUTH_BAD_RESPONSE, last.url, _first_line(exc)
            ) from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


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
        cfg.name,
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
