"""Connect to a whole federation at once.

Every enabled server is connected concurrently, each under its own connect
timeout, so one slow or broken server neither holds up nor breaks the
others: it shows up as a failed :class:`ServerReport`. The result keeps the
sessions open for reuse (the gateway pools them) until :meth:`aclose`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from cartograph import error_codes as codes
from cartograph.catalog.model import Catalog, ServerDef
from cartograph.catalog.snapshot import load_catalog
from cartograph.config.model import Config, ServerConfig
from cartograph.errors import (
    CartographError,
    NameCollisionError,
    UpstreamError,
    UpstreamTimeout,
)
from cartograph.upstream.names import check_catalog_names, check_tool_names
from cartograph.upstream.session import UpstreamSession

Status = Literal["connected", "failed", "disabled"]

Opener = Callable[[ServerConfig], Awaitable[UpstreamSession]]
"""How to open one session; tests inject in-process servers through this."""

ProgressCallback = Callable[["ServerReport"], None]
"""Called once per server as soon as it connected or failed."""


@dataclass(frozen=True)
class ServerReport:
    """What happened when connecting to one server (one row of ``cartograph servers``)."""

    name: str
    transport: str
    status: Status
    tool_count: int = 0
    connect_seconds: float | None = None
    list_bytes: int = 0
    protocol_version: str | None = None
    error: CartographError | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "status": self.status,
            "tool_count": self.tool_count,
            "connect_seconds": self.connect_seconds,
            "list_bytes": self.list_bytes,
            "protocol_version": self.protocol_version,
            "error": self.error.to_dict() if self.error is not None else None,
        }


@dataclass
class FederationResult:
    """The live federation: the catalog of servers that connected, a report per server."""

    catalog: Catalog
    reports: list[ServerReport]
    sessions: dict[str, UpstreamSession] = field(default_factory=dict)
    wall_seconds: float = 0.0

    async def aclose(self) -> None:
        """Close every session concurrently (stdio shutdown waits are bounded)."""
        async with anyio.create_task_group() as tasks:
            for session in self.sessions.values():
                tasks.start_soon(session.aclose)
        self.sessions.clear()

    @property
    def failed(self) -> list[ServerReport]:
        return [r for r in self.reports if r.status == "failed"]

    def summary(self) -> dict[str, int | float]:
        """The numbers worth recording about one connect: counts, wall time, bytes."""
        connected = [r for r in self.reports if r.status == "connected"]
        slowest = max((r.connect_seconds or 0.0 for r in connected), default=0.0)
        return {
            "servers": len(self.reports),
            "connected": len(connected),
            "failed": len(self.failed),
            "tools": self.catalog.tool_count,
            "wall_seconds": round(self.wall_seconds, 3),
            "slowest_server_seconds": round(slowest, 3),
            "tools_list_bytes": sum(r.list_bytes for r in connected),
        }


async def connect_federation(
    config: Config,
    *,
    progress: ProgressCallback | None = None,
    opener: Opener | None = None,
    servers: Sequence[ServerConfig] | None = None,
) -> FederationResult:
    """Connect to every enabled server of ``config`` (or ``servers``) concurrently."""
    chosen = tuple(config.servers if servers is None else servers)
    open_session: Opener = opener or UpstreamSession.open
    outcomes: dict[str, tuple[ServerReport, UpstreamSession | None, ServerDef | None]] = {}
    started = time.perf_counter()

    async def one(cfg: ServerConfig) -> None:
        outcome = await _connect_one(cfg, open_session)
        outcomes[cfg.name] = outcome
        if progress is not None:
            progress(outcome[0])

    async with anyio.create_task_group() as tasks:
        for cfg in chosen:
            if cfg.enabled:
                tasks.start_soon(one, cfg)
            else:
                outcomes[cfg.name] = (ServerReport(cfg.name, cfg.transport, "disabled"), None, None)
    return _assemble(chosen, outcomes, time.perf_counter() - started)


def _assemble(
    chosen: Sequence[ServerConfig],
    outcomes: dict[str, tuple[ServerReport, UpstreamSession | None, ServerDef | None]],
    wall: float,
) -> FederationResult:
    reports, sessions, defs = [], {}, []
    for cfg in chosen:
        report, session, server_def = outcomes[cfg.name]
        reports.append(report)
        if session is not None:
            sessions[cfg.name] = session
        if server_def is not None:
            defs.append(server_def)
    return FederationResult(Catalog(servers=tuple(defs)), reports, sessions, wall)


async def _connect_one(
    cfg: ServerConfig, open_session: Opener
) -> tuple[ServerReport, UpstreamSession | None, ServerDef | None]:
    """Open, list and name-check one server; never raises."""
    started = time.perf_counter()
    session: UpstreamSession | None = None
    try:
        with anyio.fail_after(cfg.connect_timeout + cfg.call_timeout):
            session = await open_session(cfg)
            server_def = await session.list_tools()
        check_tool_names(server_def)
    except (CartographError, TimeoutError) as exc:
        if session is not None:
            await session.aclose()
        error = exc if isinstance(exc, CartographError) else _timeout(cfg)
        seconds = time.perf_counter() - started
        return ServerReport(cfg.name, cfg.transport, "failed", 0, seconds, error=error), None, None
    report = ServerReport(
        cfg.name,
        cfg.transport,
        "connected",
        tool_count=len(server_def.tools),
        connect_seconds=time.perf_counter() - started,
        list_bytes=session.last_list_bytes,
        protocol_version=session.protocol_version,
    )
    return report, session, server_def


def _timeout(cfg: ServerConfig) -> UpstreamError:
    return UpstreamTimeout(
        f"upstream {cfg.name!r}: no tools/list within the connect and call timeouts",
        code=codes.UPSTREAM_TIMEOUT,
        server=cfg.name,
    )


def load_snapshot(path: Path) -> Catalog:
    """A ``catalog.json`` that stands in for the live federation, name-checked like one.

    A live server whose names collide is rejected on its own; a snapshot has no
    per-server report to carry that, so the whole file is refused (P-NAME-1).
    """
    catalog = load_catalog(path)
    try:
        check_catalog_names(catalog)
    except NameCollisionError as exc:
        raise NameCollisionError(f"{path}: {exc.message}", code=exc.code, **exc.details) from None
    return catalog


async def load_catalog_for(
    config: Config,
    catalog_path: Path | None = None,
    *,
    progress: ProgressCallback | None = None,
) -> Catalog:
    """The federation's catalog: a snapshot if one is named, else live servers.

    ``catalog_path`` (``--catalog``) wins over ``config.catalog``; without
    either, connect to every enabled server, list its tools and close again.
    Servers that fail are left out (``cartograph servers`` shows why).
    """
    snapshot = catalog_path or config.catalog
    if snapshot is not None:
        return load_snapshot(snapshot)
    result = await connect_federation(config, progress=progress)
    try:
        return result.catalog
    finally:
        await result.aclose()
