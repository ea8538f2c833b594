"""``cartograph serve --http``: start every catalog's runtime and serve them on one port.

Start-up refuses, before any upstream is touched, a bind beyond loopback
without the explicit ``allow_remote`` flag or without tokens (P-HTTP-2), and
every catalog/mount-mode combination docs/decisions/0001 forbids (``resolve_catalogs``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.types import Scope

from cartograph import error_codes as codes
from cartograph.config.catalog_rules import MountMode
from cartograph.config.catalogs import (
    ResolvedCatalog,
    resolve_catalogs,
    resolve_mount_mode,
)
from cartograph.config.model import Config
from cartograph.errors import CartographError, ConfigError
from cartograph.gateway.audit import AuditSink, Redactor
from cartograph.server.auth import TokenAuthority
from cartograph.server.handlers import ToolSurface
from cartograph.server.http._audit import HttpAudit
from cartograph.server.http._drain import (
    CLOSE_TIMEOUT,
    Drain,
    EndCalls,
    Server,
    shut_down_on_signal,
)
from cartograph.server.http._guards import WILDCARD_BINDS, is_loopback
from cartograph.server.http.app import CatalogMount, HttpSettings, Reload, build_http_app
from cartograph.server.routed import RoutedHandlers
from cartograph.storage import open_audit

logger = logging.getLogger(__name__)


def check_bind(
    host: str, *, allow_remote: bool, authority: TokenAuthority, allowed_hosts: Sequence[str]
) -> None:
    """Loopback is fine; beyond it: the flag, tokens and (wildcard binds) allowed hosts."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise ConfigError(
            f"binding to {host!r} exposes the server beyond this machine; pass --allow-remote "
            "to mean it (and configure [[http.tokens]]).",
            code=codes.REMOTE_BIND_NEEDS_FLAG,
        )
    if not authority.enabled:
        raise ConfigError(
            f"binding to {host!r} needs authentication; add [[http.tokens]] entries "
            "(principal, token_env, catalogs).",
            code=codes.REMOTE_BIND_NEEDS_AUTH,
        )
    if host in WILDCARD_BINDS and not allowed_hosts:
        raise ConfigError(
            f"binding to {host!r} accepts any Host header name; list the names clients use "
            "in http.allowed_hosts.",
            code=codes.ALLOWED_HOSTS_REQUIRED,
        )


class SurfaceFactory(Protocol):
    """Builds (per-catalog mounts, routed targets without prefix) and owns their runtimes."""

    def __call__(
        self,
        config: Config,
        catalogs: Sequence[ResolvedCatalog],
        authority: TokenAuthority,
        routed: bool,
        *,
        unsafe_throwaway_key: bool = False,
    ) -> contextlib.AbstractAsyncContextManager[
        tuple[list[CatalogMount], dict[str, ToolSurface]]
    ]: ...


@contextlib.asynccontextmanager
async def gateway_surfaces(
    config: Config,
    catalogs: Sequence[ResolvedCatalog],
    authority: TokenAuthority,
    routed: bool,
    *,
    unsafe_throwaway_key: bool = False,
) -> AsyncIterator[tuple[list[CatalogMount], dict[str, ToolSurface]]]:
    """One ``CatalogRuntime`` per catalog; its ``ProxyHandlers`` with prefix, and a bare twin.

    The twin shares the runtime, the authorizer and the audit log: the routed
    mount dispatches into the very code path the per-catalog endpoint runs.
    Upstream sessions are never shared across downstream clients (P-POOL-1).
    """
    from cartograph.server.handlers import ProxyHandlers
    from cartograph.server.runtime.catalog import CatalogRuntime

    mounts: list[CatalogMount] = []
    targets: dict[str, ToolSurface] = {}
    async with contextlib.AsyncExitStack() as stack:
        # Upstreams connect behind the served index (issue 12); on exit their
        # connects are cancelled before the runtimes close.
        background = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(background.cancel_scope.cancel)
        for cat in catalogs:
            runtime = await CatalogRuntime.start(
                config,
                cat.servers,
                name=cat.name,
                policy=cat.policy,
                unsafe_throwaway_key=unsafe_throwaway_key,
                connect_later=True,
            )
            stack.push_async_callback(runtime.aclose)
            if runtime.unchecked:
                background.start_soon(runtime.connect_upstreams)
            for prefix, routed_twin in ((cat.tool_prefix, False), (None, True)):
                if routed_twin and not routed:
                    continue
                handlers = ProxyHandlers(
                    runtime,
                    catalog=cat.name,
                    policy=cat.policy,
                    tool_prefix=prefix,
                    authorize=authority.authorize,
                )
                if routed_twin:
                    targets[cat.name] = handlers
                else:
                    mounts.append(CatalogMount(cat.name, handlers))
        stack.callback(background.cancel_scope.cancel)
        yield mounts, targets


def settings_for(config: Config, host: str) -> HttpSettings:
    return HttpSettings(
        bind_host=host,
        allowed_hosts=config.http.allowed_hosts,
        allowed_origins=config.http.allowed_origins,
        max_body_bytes=config.http.max_body_bytes,
        session_idle_timeout=config.gateway.session_idle_timeout,
        max_sessions=config.gateway.max_sessions,
        max_sessions_per_principal=config.gateway.max_sessions_per_principal,
    )


@dataclass(frozen=True, slots=True)
class ServedApp:
    """An assembled HTTP app and the decisions behind it."""

    app: Starlette
    mount_mode: MountMode
    catalogs: tuple[ResolvedCatalog, ...]
    mounts: tuple[CatalogMount, ...]
    routed_targets: Mapping[str, ToolSurface]
    audit: AuditSink | None = None
    """Where refusals made before any catalog's handlers (HTTP layer, routed mount) go."""
    reload: Reload | None = None
    """Re-verifies and serves every catalog's card set (SIGHUP, ``POST /admin/reload``)."""


@contextlib.asynccontextmanager
async def http_app(
    config: Config,
    *,
    host: str | None = None,
    mount_mode: str | None = None,
    allow_remote: bool = False,
    unsafe_throwaway_key: bool = False,
    environ: Mapping[str, str] | None = None,
    surfaces: SurfaceFactory = gateway_surfaces,
) -> AsyncIterator[ServedApp]:
    """Validate everything, start every catalog, and yield the app that serves them."""
    mode: MountMode = resolve_mount_mode(mount_mode, config, environ)
    catalogs = resolve_catalogs(config, mode)
    authority = TokenAuthority.from_config(config.http, environ)
    bind = host or config.http.host
    check_bind(
        bind,
        allow_remote=allow_remote,
        authority=authority,
        allowed_hosts=config.http.allowed_hosts,
    )
    routed = mode == "routed"
    audit = await anyio.to_thread.run_sync(open_audit, config, Redactor.from_config(config))
    try:
        async with surfaces(
            config, catalogs, authority, routed, unsafe_throwaway_key=unsafe_throwaway_key
        ) as (mounts, targets):
            reload = card_reloader([m.surface for m in mounts] + list(targets.values()))
            app = build_http_app(
                mounts,
                authority=authority,
                routed=RoutedHandlers(targets, authority=authority, audit=audit)
                if routed
                else None,
                settings=settings_for(config, bind),
                audit=audit,
                reload=reload,
                admins=frozenset(t.principal for t in config.http.tokens if t.admin),
            )
            yield ServedApp(app, mode, catalogs, tuple(mounts), targets, audit, reload)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(audit.close)


def _uvicorn_logging(config: Config) -> dict[str, Any]:
    """JSON logs: uvicorn's loggers go through the root handler, not uvicorn's own format."""
    return {"log_config": None} if config.logging.format == "json" else {}


async def run_http(
    config: Config,
    *,
    host: str | None = None,
    port: int | None = None,
    on_ready: Callable[[str], None] | None = None,
    **options: Any,
) -> None:
    """Bind, start the catalogs, serve until cancelled or signalled (options: see http_app).

    A signal drains before anything closes (``_drain``): in-flight calls get
    ``[http] shutdown_grace`` seconds, then end with ``shutting_down``.
    """
    bind = host or config.http.host
    async with http_app(config, host=bind, **options) as served:
        sock = bind_socket(bind, config.http.port if port is None else port)
        drain = Drain(served.app, on_refuse=_refusal_audit(served))
        server = Server(
            uvicorn.Config(
                drain,
                log_level="warning",
                lifespan="on",
                timeout_graceful_shutdown=CLOSE_TIMEOUT,
                **_uvicorn_logging(config),
            )
        )
        if on_ready is not None:
            name, bound_port = sock.getsockname()[:2]
            on_ready(f"http://{_url_host(name)}:{bound_port}")
        async with anyio.create_task_group() as group:
            if served.reload is not None:
                group.start_soon(reload_on_signal, served.reload)
            group.start_soon(
                shut_down_on_signal,
                server,
                drain,
                _upstream_closers(served),
                config.http.shutdown_grace,
            )
            await server.serve(sockets=[sock])
            group.cancel_scope.cancel()


def card_reloader(surfaces: Sequence[ToolSurface]) -> Reload:
    """Reload the cards of every runtime behind ``surfaces`` (routed twins share one), in turn."""
    runtimes: dict[int, Any] = {}
    for surface in surfaces:
        runtime = getattr(surface, "runtime", None)
        if runtime is not None and hasattr(runtime, "reload_cards"):
            runtimes.setdefault(id(runtime), runtime)

    async def reload() -> dict[str, Any]:
        return {runtime.name: await runtime.reload_cards() for runtime in runtimes.values()}

    return reload


async def reload_on_signal(reload: Reload) -> None:
    """SIGHUP: reload the card set (no request is dropped); a failure keeps the old set."""
    if threading.current_thread() is not threading.main_thread():
        return
    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        async for _ in signals:
            try:
                done = await reload()
            except CartographError as exc:
                logger.error("SIGHUP: card reload failed, old set kept: %s (%s)", exc, exc.code)
            else:
                logger.warning("SIGHUP: card set reloaded: %s", done)


def _refusal_audit(served: ServedApp) -> Callable[[Scope], Awaitable[None]] | None:
    if served.audit is None:
        return None
    audit = HttpAudit(served.audit)
    return lambda scope: audit.refused(scope, 503, codes.SHUTTING_DOWN)


def _upstream_closers(served: ServedApp) -> list[EndCalls]:
    """Each catalog's ``close_upstreams``, once per runtime (routed twins share one)."""
    closers: dict[int, EndCalls] = {}
    for surface in [m.surface for m in served.mounts] + list(served.routed_targets.values()):
        close = getattr(surface, "close_upstreams", None)
        if close is not None:
            closers.setdefault(id(getattr(surface, "runtime", surface)), close)
    return list(closers.values())


def serve_http(config: Config, **options: Any) -> None:
    """Blocking form of :func:`run_http` for the CLI (same keyword options)."""
    anyio.run(lambda: run_http(config, **options))


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before serving so a port of 0 yields a known, free port and errors come early."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot bind {host}:{port}: {exc.strerror}.", code=codes.BIND_FAILED
        ) from exc
    # Listen now, not when uvicorn starts: the URL is announced before that, and a
    # client that connects on the announcement must queue, not be refused.
    sock.listen(socket.SOMAXCONN)
    sock.setblocking(False)
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
