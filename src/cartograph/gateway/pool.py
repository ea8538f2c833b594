"""Long-lived upstream sessions, reused across calls and restarted when they die.

Sessions are keyed by (server, partition). The partition is ``"*"`` for an
upstream declared ``stateless`` (one session serves everyone) and otherwise
names one downstream client, so a stateful upstream's session is never shared
across clients or principals (P-POOL-1). A dead session is replaced on the
next :meth:`UpstreamPool.get`, and the replacement is counted as a restart.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import anyio
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import CallToolResult

from cartograph.catalog.model import ServerDef
from cartograph.config.model import ServerConfig
from cartograph.errors import UpstreamUnavailable

SHARED_PARTITION: Final = "*"
CLOSE_ALL_TIMEOUT: Final = 20.0


class Upstream(Protocol):
    """What the gateway needs from one session (``cartograph.upstream.session.UpstreamSession``)."""

    @property
    def alive(self) -> bool: ...

    async def list_tools(self) -> ServerDef: ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout: float,  # noqa: ASYNC109 - mirrors UpstreamSession.call_tool
        progress_callback: ProgressFnT | None = None,
    ) -> CallToolResult: ...

    async def aclose(self) -> None: ...


Opener = Callable[[ServerConfig], Awaitable[Upstream]]
OpenHook = Callable[[str, Upstream, bool], Awaitable[None]]
"""Called as ``hook(server, session, restarted)`` after each open, before first use."""


async def default_opener(cfg: ServerConfig) -> Upstream:
    from cartograph.upstream.session import UpstreamSession

    return await UpstreamSession.open(cfg)


def partition_key(principal: str | None, client: str | None) -> str | None:
    """The pool partition of one downstream client under one principal (None: no identity)."""
    if principal is None and client is None:
        return None
    return f"{principal}|{client}"


def client_of(partition: str) -> str:
    """The client part of :func:`partition_key`'s result (client keys never hold ``|``)."""
    return partition.rpartition("|")[2]


def connection_lost(session: Upstream) -> bool:
    """True when the session cannot carry a request any more.

    ``alive`` turns false only once the session itself notices; a stdio server
    that died *between* calls is noticed by the SDK dispatcher first (its read
    loop saw EOF). Peeking at that flag lets the next call restart the server
    before sending, so the call succeeds instead of failing (P-REL-2). The
    attribute walk is defensive: on any other shape we trust ``alive``.
    """
    if not session.alive:
        return True
    client = getattr(session, "_client", None)
    inner = getattr(client, "_session", None)
    dispatcher = getattr(inner, "_dispatcher", None)
    return bool(getattr(dispatcher, "_closed", False))


@dataclass
class _Slot:
    session: Upstream | None = None
    lock: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    last_used: float = field(default_factory=time.monotonic)
    opened: int = 0


@dataclass
class ServerPoolStats:
    opens: int = 0
    restarts: int = 0
    failures: int = 0
    last_error: str | None = None


class UpstreamPool:
    """Opens sessions lazily (or eagerly via :meth:`get`) and hands the live one out."""

    def __init__(
        self,
        opener: Opener = default_opener,
        *,
        on_open: OpenHook | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        self._opener = opener
        self._on_open = on_open
        self._idle_timeout = idle_timeout
        self._slots: dict[tuple[str, str], _Slot] = {}
        self.stats: dict[str, ServerPoolStats] = {}
        self._closed = False

    async def get(self, cfg: ServerConfig, partition: str) -> Upstream:
        """The live session for (server, partition), opening or restarting it as needed.

        Raises the opener's :class:`~cartograph.errors.UpstreamError` when the
        server cannot be (re)started.
        """
        if self._closed:
            raise UpstreamUnavailable(
                "the proxy is shutting down; no new upstream sessions",
                code="shutting_down",
                server=cfg.name,
            )
        if self._idle_timeout is not None:
            await self._sweep_idle()
        slot = self._slots.setdefault((cfg.name, partition), _Slot())
        current = slot.session
        if current is not None and not slot.lock.locked() and not connection_lost(current):
            # Hot path: a live session nobody is replacing; no lock, no event-loop round trip.
            slot.last_used = time.monotonic()
            return current
        async with slot.lock:
            slot.last_used = time.monotonic()
            current = slot.session
            if current is not None and not connection_lost(current):
                return current
            restarted = current is not None or slot.opened > 0
            if current is not None:
                slot.session = None
                await _close_quietly(current)
            return await self._open_into(slot, cfg, restarted=restarted)

    async def _open_into(self, slot: _Slot, cfg: ServerConfig, *, restarted: bool) -> Upstream:
        stats = self.stats.setdefault(cfg.name, ServerPoolStats())
        try:
            session = await self._opener(cfg)
        except Exception as exc:
            stats.failures += 1
            stats.last_error = str(exc)
            raise
        try:
            if self._on_open is not None:
                await self._on_open(cfg.name, session, restarted)
        except BaseException:
            await _close_quietly(session)
            raise
        stats.opens += 1
        if restarted:
            stats.restarts += 1
        slot.session = session
        slot.opened += 1
        return session

    def peek(self, server: str, partition: str = SHARED_PARTITION) -> Upstream | None:
        slot = self._slots.get((server, partition))
        return None if slot is None else slot.session

    async def release(self, client: str) -> None:
        """Close every session of one downstream client (it disconnected), under any principal."""
        if client == SHARED_PARTITION:
            return
        doomed = [key for key in self._slots if client_of(key[1]) == client]
        await self._close_keys(doomed)

    async def _sweep_idle(self) -> None:
        if self._idle_timeout is None:
            return
        cutoff = time.monotonic() - self._idle_timeout
        idle = [
            key
            for key, slot in self._slots.items()
            if key[1] != SHARED_PARTITION and slot.last_used < cutoff and not slot.lock.locked()
        ]
        await self._close_keys(idle)

    async def _close_keys(self, keys: list[tuple[str, str]]) -> None:
        sessions = [s for key in keys if (s := self._slots.pop(key).session) is not None]
        await _close_all(sessions)

    async def aclose(self) -> None:
        """Close every session concurrently; no upstream child survives (P-REL-7)."""
        self._closed = True
        sessions = [slot.session for slot in self._slots.values() if slot.session is not None]
        self._slots.clear()
        await _close_all(sessions)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per server: sessions open, partitions, opens, restarts, last error."""
        out: dict[str, dict[str, Any]] = {}
        for name, stats in self.stats.items():
            out[name] = {
                "opens": stats.opens,
                "restarts": stats.restarts,
                "open_failures": stats.failures,
                "last_error": stats.last_error,
            }
        for (name, _partition), slot in self._slots.items():
            entry = out.setdefault(name, {"opens": 0, "restarts": 0, "open_failures": 0})
            live = slot.session is not None and slot.session.alive
            entry["sessions"] = entry.get("sessions", 0) + (1 if live else 0)
        for entry in out.values():
            entry.setdefault("sessions", 0)
        return out


async def _close_quietly(session: Upstream) -> None:
    # Closing a broken session must not fail the caller.
    with (
        anyio.CancelScope(shield=True),
        anyio.move_on_after(CLOSE_ALL_TIMEOUT),
        contextlib.suppress(Exception),
    ):
        await session.aclose()


async def _close_all(sessions: list[Upstream]) -> None:
    if not sessions:
        return
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as group:
            for session in sessions:
                group.start_soon(_close_quietly, session)
