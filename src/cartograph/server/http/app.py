"""The Starlette app: every catalog at ``/mcp/<name>``, the routed mount, ``/health``.

Request path, outermost first:

1. :class:`GuardMiddleware` — 421 foreign ``Host``, 403 foreign ``Origin`` (P-HTTP-1);
2. authentication — 401 without a valid bearer token when tokens are configured;
3. mount resolution — ``/mcp/<name>``, ``/mcp?catalog=<name>``, ``/mcp`` with one
   catalog, ``/mcp/routed`` when routing is on; two channels that disagree, or
   any ``?catalog=`` on the routed mount, are 400 (P-HTTP-5); unknown is 404;
4. the metadata gate — a catalog the principal may not reach is answered exactly like
   one that does not exist (404, P-AUTH-5); the routed mount is 403 unless the
   principal reaches at least one routed catalog;
5. the mount's own SDK session manager, which refuses bodies over the limit with
   413 before parsing (P-HTTP-3) and binds each session to its principal (P-HTTP-4).

Every refusal on that path, whichever layer answers it, writes one audit record
(P-AUDIT-1, see ``_audit.py``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.applications import Starlette
from starlette.datastructures import Headers, QueryParams
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from cartograph import __version__
from cartograph import error_codes as codes
from cartograph.config.catalog_rules import ROUTED_NAME, MountMode
from cartograph.config.model import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
    DEFAULT_SESSION_IDLE_TIMEOUT,
)
from cartograph.errors import (
    AuthenticationError,
    CartographError,
    ConfigError,
    SessionLimitError,
)
from cartograph.gateway.audit import AuditLog, AuditSink
from cartograph.server.auth import Principal, TokenAuthority
from cartograph.server.handlers import ToolSurface
from cartograph.server.http._audit import HttpAudit
from cartograph.server.http._guards import GuardMiddleware, HostPolicy, OriginPolicy
from cartograph.server.http._mount import PRINCIPAL_SCOPE_KEY, build_mount_server
from cartograph.server.http._replies import with_request_ids
from cartograph.server.http._sessions import SessionEnded, SessionManager, opens_session
from cartograph.server.notify import ChangeNotifier
from cartograph.server.proxy import http_client_key
from cartograph.server.routed import RoutedHandlers

MCP_PATH: Final = "/mcp"
ROUTED_PATH: Final = f"{MCP_PATH}/{ROUTED_NAME}"
HEALTH_PATH: Final = "/health"
METRICS_PATH: Final = "/metrics"
RELOAD_PATH: Final = "/admin/reload"

Reload = Callable[[], Awaitable[dict[str, Any]]]
"""Re-verifies and serves the card set of every catalog; returns what each now serves."""
CATALOG_QUERY: Final = "catalog"
# JSON-RPC "invalid request", the code the SDK itself uses for HTTP-level refusals.
_INVALID_REQUEST: Final = -32600


@dataclass(frozen=True, slots=True)
class CatalogMount:
    """One catalog's per-catalog surface (its ``ProxyHandlers`` with its effective prefix)."""

    name: str
    surface: ToolSurface


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """The HTTP-layer knobs; safe by default (loopback, no origins, 4 MiB bodies)."""

    bind_host: str = "127.0.0.1"
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT
    max_sessions: int | None = DEFAULT_MAX_SESSIONS
    max_sessions_per_principal: int | None = DEFAULT_MAX_SESSIONS_PER_PRINCIPAL


class _Refusal(Exception):
    """An HTTP refusal; ``outcome``/``catalog`` are what the audit says when it knows more."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        outcome: str | None = None,
        catalog: str = "",
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.outcome = outcome or code
        self.catalog = catalog

    def response(self) -> Response:
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": _INVALID_REQUEST,
                "message": self.message,
                "data": {"code": self.code},
            },
        }
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else None
        return JSONResponse(body, status_code=self.status, headers=headers)


@dataclass(slots=True)
class _Mount:
    """A served MCP endpoint: its SDK server's session manager and who may reach it."""

    label: str
    catalogs: tuple[str, ...]
    manager: SessionManager
    routed: bool = False


@dataclass(slots=True)
class _Mounts:
    per_catalog: dict[str, _Mount]
    routed: _Mount | None
    all: list[_Mount] = field(default_factory=list)

    @property
    def mount_mode(self) -> MountMode:
        return "routed" if self.routed is not None else "per-catalog"


def _manager(surface: ToolSurface, label: str, settings: HttpSettings) -> SessionManager:
    server = build_mount_server(surface, label=label)
    return SessionManager(
        server,
        max_request_body_size=settings.max_body_bytes,
        session_idle_timeout=settings.session_idle_timeout,
        max_sessions=settings.max_sessions,
        max_sessions_per_principal=settings.max_sessions_per_principal,
        on_session_end=_releaser(surface, getattr(server, "notifier", None)),
    )


def _releaser(surface: ToolSurface, notifier: ChangeNotifier | None = None) -> SessionEnded | None:
    """When an MCP session ends, its client's upstream sessions are closed (P-POOL-1).

    The mount's list_changed notifier forgets the client too, so ended sessions are not
    kept (nor notified) for the life of the server.
    """
    release = getattr(surface, "release_client", None)
    if release is None and notifier is None:
        return None

    async def on_end(session_id: str) -> None:
        client = http_client_key(session_id)
        if notifier is not None:
            notifier.forget(client)
        if release is not None:
            await release(client)

    return on_end


def _build_mounts(
    catalogs: Sequence[CatalogMount], routed: RoutedHandlers | None, settings: HttpSettings
) -> _Mounts:
    names = [c.name for c in catalogs]
    if len(set(names)) != len(names) or not names:
        raise ConfigError(
            "the HTTP server needs distinct, non-empty catalog names.", code=codes.BAD_CATALOGS
        )
    if routed is not None and ROUTED_NAME in names:
        raise ConfigError(
            f'a catalog named "{ROUTED_NAME}" is refused while routing is on.',
            code=codes.CATALOG_NAME_RESERVED,
        )
    per = {
        c.name: _Mount(c.name, (c.name,), _manager(c.surface, c.name, settings)) for c in catalogs
    }
    mounts = _Mounts(per, None, list(per.values()))
    if routed is not None:
        mounts.routed = _Mount(
            ROUTED_NAME, routed.catalogs, _manager(routed, ROUTED_NAME, settings), routed=True
        )
        mounts.all.append(mounts.routed)
    return mounts


def _resolve(
    mounts: _Mounts, path_name: str | None, query: QueryParams, principal: Principal
) -> _Mount:
    """Which mount a request means; raises _Refusal (400 / 404) naming only reachable catalogs."""
    chosen = query.getlist(CATALOG_QUERY)
    if len(set(chosen)) > 1:
        raise _Refusal(
            400,
            codes.CONFLICTING_CATALOG,
            "?catalog= is given more than once with different values.",
        )
    wanted = chosen[0] if chosen else None
    if path_name == ROUTED_NAME and mounts.routed is not None:
        if chosen:
            raise _Refusal(
                400,
                codes.CATALOG_ON_ROUTED_MOUNT,
                "the routed mount takes the catalog as a tool argument; drop ?catalog=.",
            )
        return mounts.routed
    if path_name is not None and wanted is not None and wanted != path_name:
        raise _Refusal(
            400,
            codes.CONFLICTING_CATALOG,
            f"/mcp/{path_name} conflicts with ?catalog={wanted}; choose the catalog one way.",
        )
    name = path_name or wanted
    if name is None:
        if len(mounts.per_catalog) == 1:
            return next(iter(mounts.per_catalog.values()))
        paths = ", ".join(f"{MCP_PATH}/{n}" for n in principal.reachable(mounts.per_catalog))
        where = paths or f"the paths {HEALTH_PATH} lists"
        raise _Refusal(
            400, codes.CATALOG_REQUIRED, f"name the catalog in the path; use one of {where}."
        )
    mount = mounts.per_catalog.get(name)
    if mount is None:
        raise _no_such_catalog(name)
    return mount


def _no_such_catalog(name: str, **audit: str) -> _Refusal:
    return _Refusal(
        404, codes.UNKNOWN_CATALOG, f"no catalog {name!r} here; see {HEALTH_PATH}.", **audit
    )


def _gate(principal: Principal, mount: _Mount) -> None:
    """The metadata gate: reach this catalog, or at least one routed catalog.

    A per-catalog endpoint the principal may not reach answers exactly as a
    catalog that does not exist, so probing paths learns no names (P-AUTH-5);
    the audit record still says what happened.
    """
    if principal.reachable(mount.catalogs):
        return
    if not mount.routed:
        raise _no_such_catalog(mount.label, outcome=codes.CATALOG_FORBIDDEN, catalog=mount.label)
    raise _Refusal(
        403,
        codes.CATALOG_FORBIDDEN,
        f"principal {principal.name!r} may not use {MCP_PATH}/{mount.label}.",
        catalog=mount.label,
    )


def _admit(mount: _Mount, scope: Scope, principal: Principal) -> None:
    """429 ``session_limit`` for a request that would open a session beyond a cap (P-REL-12)."""
    if scope.get("method") != "POST" or not opens_session(Headers(scope=scope)):
        return
    try:
        mount.manager.check_capacity(principal.name)
    except SessionLimitError as exc:
        raise _Refusal(429, exc.code, exc.message) from exc


class _McpEndpoint:
    """ASGI endpoint for ``/mcp`` and ``/mcp/{name}``."""

    def __init__(self, mounts: _Mounts, authority: TokenAuthority, audit: HttpAudit) -> None:
        self.mounts = mounts
        self.authority = authority
        self.audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        principal: Principal | None = None
        try:
            principal = _authenticate(self.authority, Headers(scope=scope))
            path_name = scope.get("path_params", {}).get("name")
            query = QueryParams(scope.get("query_string", b""))
            mount = _resolve(self.mounts, path_name, query, principal)
            _gate(principal, mount)
            _admit(mount, scope, principal)
        except _Refusal as refusal:
            await self.audit.refused(
                scope,
                refusal.status,
                refusal.outcome,
                catalog=refusal.catalog,
                principal=self._name(principal),
                started=started,
            )
            await refusal.response()(scope, receive, send)
            return
        watched = self.audit.watching(
            scope, send, catalog=mount.label, principal=self._name(principal), started=started
        )
        teed, answered = with_request_ids(
            scope, receive, watched, limit=mount.manager.max_request_body_size
        )
        await mount.manager.handle_request(
            _with_principal(scope, principal, self.authority), teed, answered
        )

    def _name(self, principal: Principal | None) -> str | None:
        """The principal as audit records name it (None when auth is off, as for calls)."""
        return principal.name if principal is not None and self.authority.enabled else None


def _authenticate(authority: TokenAuthority, headers: Headers) -> Principal:
    try:
        return authority.authenticate(headers.get("authorization"))
    except AuthenticationError as exc:
        raise _Refusal(401, exc.code, exc.message) from exc


def _with_principal(scope: Scope, principal: Principal, authority: TokenAuthority) -> Scope:
    """Record the principal for the handlers, and as the SDK's session owner."""
    scope = dict(scope)
    if authority.enabled:
        scope[PRINCIPAL_SCOPE_KEY] = principal.name
        token = AccessToken(
            token=f"principal:{principal.name}", client_id=principal.name, scopes=[]
        )
        scope["user"] = AuthenticatedUser(token)
    else:
        scope[PRINCIPAL_SCOPE_KEY] = None
    return scope


def health_document(
    mounts: _Mounts, visible: Sequence[str] | None, *, auth: bool
) -> dict[str, Any]:
    """What ``/health`` says; ``mount_mode``/``routed_path`` appear only when routing is on."""
    doc: dict[str, Any] = {
        "status": "ok",
        "version": __version__,
        "auth": "bearer" if auth else "none",
    }
    if visible is not None:
        doc["catalogs"] = [{"name": n, "path": f"{MCP_PATH}/{n}"} for n in visible]
    if mounts.routed is not None:
        doc["mount_mode"] = "routed"
        doc["routed_path"] = ROUTED_PATH
    return doc


def _health_endpoint(mounts: _Mounts, authority: TokenAuthority) -> Any:
    async def health(request: Request) -> Response:
        visible: tuple[str, ...] | None
        try:
            principal = authority.authenticate(request.headers.get("authorization"))
            visible = principal.reachable(mounts.per_catalog)
        except AuthenticationError:
            visible = None  # liveness stays public; the catalog list does not
        return JSONResponse(health_document(mounts, visible, auth=authority.enabled))

    return health


def _metrics_endpoint(mounts: _Mounts, authority: TokenAuthority, audit: HttpAudit) -> Any:
    """``/metrics``: public like ``/health`` on an unauthenticated (loopback-only) server;
    with tokens, 401 without a valid one, and only the catalogs that token reaches."""
    from cartograph.server import metrics

    async def scrape(request: Request) -> Response:
        catalogs: tuple[str, ...] | None = None
        if authority.enabled:
            try:
                principal = authority.authenticate(request.headers.get("authorization"))
            except AuthenticationError as exc:
                await audit.refused(request.scope, 401, exc.code)
                return _Refusal(401, exc.code, exc.message).response()
            catalogs = principal.reachable(mounts.per_catalog)
        # On the event loop: the gauges read live runtime state the loop mutates.
        body = metrics.exposition(catalogs)
        return Response(body, media_type=metrics.CONTENT_TYPE)

    return scrape


def _reload_endpoint(
    reload: Reload, authority: TokenAuthority, admins: frozenset[str], audit: HttpAudit
) -> Any:
    """``POST /admin/reload``: an ``admin = true`` token re-verifies and swaps the card set.

    Requests in flight are not touched: each finishes against the cards it
    started with (``CatalogRuntime.reload_cards``). SIGHUP does the same.
    """

    async def reload_cards(request: Request) -> Response:
        started = time.perf_counter()
        try:
            principal = authority.authenticate(request.headers.get("authorization"))
            if principal.name not in admins:
                raise _Refusal(
                    403,
                    codes.ADMIN_REQUIRED,
                    f"principal {principal.name!r} may not reload; set admin = true on its "
                    "[[http.tokens]] entry",
                )
        except AuthenticationError as exc:
            refusal = _Refusal(401, exc.code, exc.message)
            await audit.refused(request.scope, 401, exc.code, started=started)
            return refusal.response()
        except _Refusal as refusal:
            await audit.refused(request.scope, refusal.status, refusal.code, started=started)
            return refusal.response()
        try:
            done = await reload()
        except CartographError as exc:
            return JSONResponse({"status": "kept", "error": exc.to_dict()}, status_code=409)
        return JSONResponse({"status": "reloaded", "catalogs": done})

    return reload_cards


def build_http_app(
    catalogs: Sequence[CatalogMount],
    *,
    authority: TokenAuthority,
    routed: RoutedHandlers | None = None,
    settings: HttpSettings | None = None,
    audit: AuditSink | None = None,
    reload: Reload | None = None,
    admins: frozenset[str] = frozenset(),
) -> Starlette:
    """The whole HTTP surface; ``routed`` given means routing is on (``/mcp/routed``).

    ``audit`` receives a record for every refusal the HTTP layer answers itself
    (default: an in-memory log, kept as ``app.state.audit``).
    """
    settings = settings or HttpSettings()
    mounts = _build_mounts(catalogs, routed, settings)
    refusals = HttpAudit(audit if audit is not None else AuditLog())
    endpoint = _McpEndpoint(mounts, authority, refusals)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for mount in mounts.all:
                await stack.enter_async_context(mount.manager.run())
            yield

    guard = Middleware(
        GuardMiddleware,
        hosts=HostPolicy(settings.bind_host, settings.allowed_hosts),
        origins=OriginPolicy(settings.allowed_origins),
        on_refuse=refusals.refused,
    )
    routes = [
        Route(HEALTH_PATH, _health_endpoint(mounts, authority), methods=["GET"]),
        Route(METRICS_PATH, _metrics_endpoint(mounts, authority, refusals), methods=["GET"]),
    ]
    if reload is not None and authority.enabled and admins:
        routes.append(
            Route(
                RELOAD_PATH,
                _reload_endpoint(reload, authority, admins, refusals),
                methods=["POST"],
            )
        )
    routes += [
        Route(MCP_PATH, endpoint),
        Route(MCP_PATH + "/{name}", endpoint),
    ]
    app = Starlette(routes=routes, middleware=[guard], lifespan=lifespan)
    app.state.audit = refusals.log
    return app
