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
from cartograph.config.oauth import Registration
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

_NOT_OFFERED: Final = frozenset({401, 403, 404, 405})
"""A registration endpoint's answers that say there is none to use (a 400 is an OAuth error
about the request, which the SDK reports)."""

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
    """The SDK's ``TokenStorage`` over one private JSON file (tokens, expiry, registration).

    With a pre-registered ``client`` (from the config), that client is the one the SDK
    gets, before any stored registration, and its secret is never written to the file.
    Each token set is stored with the registration and client id it was obtained with.
    """

    def __init__(
        self,
        path: Path,
        client: OAuthClientInformationFull | None = None,
        metadata_url: str | None = None,
    ) -> None:
        self.path = path
        self.client = client
        self.metadata_url = metadata_url

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
        data["registration"], data["client_id"] = self._registration(data)
        self._write(data)

    def _registration(self, data: dict[str, Any]) -> tuple[Registration | None, str | None]:
        """Which way the client in use got its id, and the id (what `auth status` shows)."""
        if self.client is not None:
            return "pre-registered", self.client.client_id
        return self.stored_registration(data)

    def stored_registration(self, data: dict[str, Any]) -> tuple[Registration | None, str | None]:
        """The stored client's way and id (a dynamic registration, or a metadata document)."""
        stored = data.get("client")
        client_id = stored.get("client_id") if isinstance(stored, dict) else None
        if not isinstance(client_id, str):
            return None, None
        cimd = self.metadata_url is not None and client_id == self.metadata_url
        return ("client-id-metadata-document" if cimd else "dynamic"), client_id

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.client is not None:
            return self.client
        raw = self.read().get("client")
        return _parsed(OAuthClientInformationFull, raw, self.path)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        data = self.read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        data["client_kind"] = self._registration({"client": data["client"]})[0]
        self._write(data)

    def forget_client(self) -> None:
        """Drop the registration (and its tokens): the next login registers afresh."""
        if self.path.exists():
            self._write({})

    def forget_tokens(self) -> None:
        """Drop the tokens, keeping a registration: they belong to another client."""
        data = self.read()
        for key in ("tokens", "expires_at", "registration", "client_id"):
            data.pop(key, None)
        if self.path.exists():
            self._write(data)


def stored_tokens(path: Path) -> list[str]:
    """The access and refresh token a token file holds, for redactors and the secret scan;
    none when it is absent or unreadable (the connect that needs it says why)."""
    try:
        tokens = TokenFile(path).read().get("tokens")
    except ConfigError:
        return []
    if not isinstance(tokens, dict):
        return []
    found = (tokens.get("access_token"), tokens.get("refresh_token"))
    return [value for value in found if isinstance(value, str) and value]


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

    def __init__(self, store: TokenFile, server: str, redirect: str, **options: Any) -> None:
        super().__init__(storage=store, **options)
        self._store = store
        self._server = server
        self._redirect = redirect
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
                if self._registers(outgoing, request):
                    self._refuse_unoffered_registration()
                response = yield outgoing
                if self._registers(outgoing, request) and response.status_code in _NOT_OFFERED:
                    self._fault = self._no_registration(f"it answered HTTP {response.status_code}")
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

    def _registers(self, outgoing: httpx2.Request, request: httpx2.Request) -> bool:
        """Whether ``outgoing`` is dynamic client registration: the one POST of the flow
        made while it has no client (a token request always has one)."""
        return (
            outgoing is not request
            and outgoing.method == "POST"
            and self.context.client_info is None
        )

    def _refuse_unoffered_registration(self) -> None:
        """Refuse, before sending it, a registration the server's metadata does not offer.

        With no pre-registered client, and no client ID metadata document the server
        accepts, the SDK falls back to dynamic registration, at a guessed ``/register``
        when the metadata names no endpoint: a server that publishes metadata without
        one does not offer it (RFC 8414), and the operator must configure a client.
        """
        metadata = self.context.oauth_metadata
        if metadata is not None and metadata.registration_endpoint is None:
            raise self._no_registration("its metadata names no registration_endpoint")

    def _no_registration(self, why: str) -> UpstreamUnavailable:
        metadata = self.context.oauth_metadata
        cimd = metadata is not None and metadata.client_id_metadata_document_supported is True
        origin = str(metadata.issuer) if metadata is not None else self.context.server_url
        other = (
            "it accepts client ID metadata documents, so oauth.client_metadata_url (an "
            "https:// URL serving `cartograph auth client-metadata` output) is another way"
            if cimd
            else "it does not accept client ID metadata documents either"
        )
        return UpstreamUnavailable(
            f"upstream {self._server!r}: its authorization server {origin} offers no dynamic "
            f"client registration ({why}); {other}. Register a client with the provider "
            f"(redirect URI {self._redirect}) and set oauth.client_id, with "
            "oauth.client_secret_env or oauth.client_secret_file for a confidential client, "
            f"in [servers.{self._server}]",
            code=codes.OAUTH_NO_REGISTRATION,
            server=self._server,
            authorization_server=origin,
        )

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


def token_file(cfg: ServerConfig) -> TokenFile:
    """``cfg``'s token store, holding its pre-registered client (secret read now) if any."""
    return TokenFile(store_path(cfg), preregistered(cfg), cfg.oauth.client_metadata_url)


def preregistered(cfg: ServerConfig) -> OAuthClientInformationFull | None:
    """The client the operator registered with the provider (``oauth.client_id``), if any."""
    oauth = cfg.oauth
    if oauth.client_id is None:
        return None
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=oauth.client_secret(cfg.name),
        token_endpoint_auth_method=oauth.auth_method,
        redirect_uris=[AnyUrl(redirect_uri(cfg))],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=" ".join(oauth.scopes) or None,
    )


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
    store_path(cfg)
    try:
        store = token_file(cfg)
    except ConfigError as exc:  # a secret gone since load: this server fails, not the federation
        raise UpstreamUnavailable(str(exc), code=exc.code, server=cfg.name) from None
    if redirect is None and not store.read().get("tokens"):
        raise _login_required(cfg)

    async def needs_login(_url: str) -> None:
        raise _login_required(cfg)

    async def no_callback() -> AuthorizationCodeResult:
        raise _login_required(cfg)

    return _Provider(
        store,
        cfg.name,
        redirect_uri(cfg),
        server_url=cfg.url,
        client_metadata=client_metadata(cfg),
        client_metadata_url=cfg.oauth.client_metadata_url,
        redirect_handler=redirect or needs_login,
        callback_handler=callback or no_callback,
    )


def _login_required(cfg: ServerConfig) -> OAuthLoginRequired:
    return OAuthLoginRequired(
        f"upstream {cfg.name!r} needs an OAuth login: run `cartograph auth login {cfg.name}`",
        server=cfg.name,
    )


def metadata_document(cfg: ServerConfig) -> dict[str, Any]:
    """The client ID metadata document to serve at ``oauth.client_metadata_url``.

    Its ``client_id`` is that URL, its redirect URI the loopback one `auth login` listens
    on; a public client (PKCE, no secret), as a document anyone can read must describe.
    """
    url = cfg.oauth.client_metadata_url
    if url is None:
        raise ConfigError(
            f"server {cfg.name!r}: no oauth.client_metadata_url is set; set it to the https:// "
            "URL the document will be served at",
            code=codes.OAUTH_BAD_CLIENT,
            server=cfg.name,
            key="oauth.client_metadata_url",
        )
    body = client_metadata(cfg).model_dump(mode="json", exclude_none=True)
    return {"client_id": url, **body}


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
        "registration": data.get("registration"),
        "client_id": data.get("client_id"),
        "store": str(store_path(cfg)),
    }
