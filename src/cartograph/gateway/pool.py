"""Long-lived upstream sessions, reused across calls and restarted when they die.

Sessions are keyed by (server, partition). The partition is ``"*"`` for an
upstream declared ``stateless`` (one session serves everyone) and otherwise
names one downstream client, so a stateful upstream's session is never shared
across clients or principals (P-POOL-1). A dead session is replaced on the
next :meth:`UpstreamPool.get`, and the replacement is counted as a restart.

Every per-client session is bounded (P-REL-12, :class:`PoolLimits`): in total
and per principal (each stateful stdio session is a child process), and by
idle expiry. A session whose call timed out may still be receiving that reply,
so it is *retired* — taken out of its slot at once, closed once the calls
already on it end — and never handed out again half-read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol

import anyio
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import (
    CallToolResult,
    CompleteResult,
    CompletionArgument,
    GetPromptResult,
    PromptReference,
    ReadResourceResult,
    ResourceTemplateReference,
)

from cartograph import error_codes as codes
from cartograph.catalog.model import ServerDef
from cartograph.config.model import (
    DEFAULT_MAX_UPSTREAM_SESSIONS,
    DEFAULT_MAX_UPSTREAM_SESSIONS_PER_PRINCIPAL,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    ServerConfig,
)
from cartograph.errors import SessionLimitError, UpstreamUnavailable

if TYPE_CHECKING:
    from cartograph.upstream.content import ContentListing

SHARED_PARTITION: Final = "*"
CLOSE_ALL_TIMEOUT: Final = 20.0
SESSIONLESS_CLIENT: Final = "http:sessionless"
"""The client key of a downstream request that carries no session (2026-07-28 HTTP)."""


@dataclass(frozen=True)
class PoolLimits:
    """Bounds on per-client (non-shared) upstream sessions; ``None`` means unbounded."""

    max_sessions: int | None = DEFAULT_MAX_UPSTREAM_SESSIONS
    max_sessions_per_principal: int | None = DEFAULT_MAX_UPSTREAM_SESSIONS_PER_PRINCIPAL
    idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT


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

    async def list_content(self) -> ContentListing: ...

    async def read_resource(
        self,
        uri: str,
        *,
        timeout: float,  # noqa: ASYNC109 - mirrors UpstreamSession.read_resource
    ) -> ReadResourceResult: ...

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None,
        *,
        timeout: float,  # noqa: ASYNC109 - mirrors UpstreamSession.get_prompt
    ) -> GetPromptResult: ...

    async def complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        timeout: float,  # noqa: ASYNC109 - mirrors UpstreamSession.complete
    ) -> CompleteResult: ...

    async def subscribe_resource(
        self,
        uri: str,
        *,
        timeout: float,  # noqa: ASYNC109 - mirrors UpstreamSession.subscribe_resource
    ) -> None: ...

    async def unsubscribe_resource(
        self,
        uri: str,
        *,
        timeout: float,  # noqa: ASYNC109 - mirrors UpstreamSession.unsubscribe_resource
    ) -> None: ...

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


def principal_of(partition: str) -> str:
    """The principal part of :func:`partition_key`'s result (``"None"`` when auth is off)."""
    return partition.rpartition("|")[0]


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
    retired: int = 0
    expired: int = 0
    last_error: str | None = None


class UpstreamPool:
    """Opens sessions lazily (or eagerly via :meth:`get`) and hands the live one out."""

    def __init__(
        self,
        opener: Opener = default_opener,
        *,
        on_open: OpenHook | None = None,
        limits: PoolLimits | None = None,
    ) -> None:
        self._opener = opener
        self._on_open = on_open
        self.limits = limits or PoolLimits()
        self._slots: dict[tuple[str, str], _Slot] = {}
        self.stats: dict[str, ServerPoolStats] = {}
        self._closed = False
        self._leases: dict[int, int] = {}
        self._retiring: dict[int, Upstream] = {}
        self._closers: set[asyncio.Task[None]] = set()
        self.refused = 0

    async def get(self, cfg: ServerConfig, partition: str) -> Upstream:
        """The live session for (server, partition), opening or restarting it as needed.

        Raises the opener's :class:`~cartograph.errors.UpstreamError` when the
        server cannot be (re)started.
        """
        if self._closed:
            raise UpstreamUnavailable(
                "the proxy is shutting down; no new upstream sessions",
                code=codes.SHUTTING_DOWN,
                server=cfg.name,
            )
        slot = self._slots.get((cfg.name, partition))
        if slot is None:
            slot = await self._admit(cfg.name, partition)
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

    async def _admit(self, server: str, partition: str) -> _Slot:
        """A new slot for (server, partition), within the session caps (P-REL-12).

        Idle sessions are expired first, so a cap only refuses while that many
        clients are really active. The count and the insert happen without an
        await in between, so concurrent admissions cannot overshoot.
        """
        if partition != SHARED_PARTITION:
            await self.sweep_idle()
            self._check_caps(server, partition)
        return self._slots.setdefault((server, partition), _Slot())

    def _check_caps(self, server: str, partition: str) -> None:
        limits = self.limits
        per_client = [key for key in self._slots if key[1] != SHARED_PARTITION]
        principal = principal_of(partition)
        if limits.max_sessions is not None and len(per_client) >= limits.max_sessions:
            self._refuse(server, "max_upstream_sessions", limits.max_sessions, "in total")
        if limits.max_sessions_per_principal is not None:
            mine = sum(1 for key in per_client if principal_of(key[1]) == principal)
            if mine >= limits.max_sessions_per_principal:
                who = f"for principal {principal!r}" if principal != "None" else "without auth"
                self._refuse(
                    server,
                    "max_upstream_sessions_per_principal",
                    limits.max_sessions_per_principal,
                    who,
                )

    def _refuse(self, server: str, setting: str, limit: int, scope: str) -> NoReturn:
        self.refused += 1
        raise SessionLimitError(
            f"upstream session limit reached: {limit} per-client session(s) {scope} "
            f"([gateway] {setting}); end idle MCP sessions (they expire after "
            f"[gateway] session_idle_timeout) or raise the limit",
            server=server,
            setting=setting,
            limit=limit,
        )

    # -- leases and retirement -------------------------------------------------------

    @contextlib.contextmanager
    def leased(self, session: Upstream) -> Iterator[Upstream]:
        """Mark ``session`` as carrying a call, so retiring it waits for the call to end."""
        key = id(session)
        self._leases[key] = self._leases.get(key, 0) + 1
        try:
            yield session
        finally:
            left = self._leases[key] - 1
            if left:
                self._leases[key] = left
            else:
                del self._leases[key]
                retired = self._retiring.pop(key, None)
                if retired is not None:
                    self._close_later(retired)

    def retire(self, server: str, partition: str, session: Upstream) -> None:
        """Never hand ``session`` out again; close it once the calls on it have ended.

        For a session whose call timed out: the late reply may still be on the
        wire, and a call sent behind it would wait for (or misread) it. The next
        :meth:`get` opens a fresh session, counted as a restart.
        """
        slot = self._slots.get((server, partition))
        if slot is not None and slot.session is session:
            slot.session = None
        stats = self.stats.setdefault(server, ServerPoolStats())
        stats.retired += 1
        if id(session) in self._leases:
            self._retiring[id(session)] = session
        else:
            self._close_later(session)

    def _close_later(self, session: Upstream) -> None:
        task = asyncio.get_running_loop().create_task(_close_quietly(session))
        self._closers.add(task)
        task.add_done_callback(self._closers.discard)

    def live_sessions(self) -> list[tuple[str, Upstream]]:
        """Every open, live session as (server, session), for the periodic re-list."""
        return [
            (name, slot.session)
            for (name, _partition), slot in self._slots.items()
            if slot.session is not None and slot.session.alive
        ]

    def peek(self, server: str, partition: str = SHARED_PARTITION) -> Upstream | None:
        slot = self._slots.get((server, partition))
        return None if slot is None else slot.session

    async def release(self, client: str) -> None:
        """Close every session of one downstream client (it disconnected), under any principal."""
        if client == SHARED_PARTITION:
            return
        doomed = [key for key in self._slots if client_of(key[1]) == client]
        await self._close_keys(doomed)

    async def sweep_idle(self) -> None:
        """Close per-client sessions unused for ``idle_timeout`` and not carrying a call."""
        if self.limits.idle_timeout is None:
            return
        cutoff = time.monotonic() - self.limits.idle_timeout
        idle = [
            key
            for key, slot in self._slots.items()
            if key[1] != SHARED_PARTITION
            and slot.last_used < cutoff
            and not slot.lock.locked()
            and (slot.session is None or id(slot.session) not in self._leases)
        ]
        for key in idle:
            self.stats.setdefault(key[0], ServerPoolStats()).expired += 1
        await self._close_keys(idle)

    async def _close_keys(self, keys: list[tuple[str, str]]) -> None:
        sessions = [s for key in keys if (s := self._slots.pop(key).session) is not None]
        await _close_all(sessions)

    async def aclose(self) -> None:
        """Close every session concurrently; no upstream child survives (P-REL-7)."""
        self._closed = True
        sessions = [slot.session for slot in self._slots.values() if slot.session is not None]
        sessions += self._retiring.values()
        self._slots.clear()
        self._retiring.clear()
        await _close_all(sessions)
        if self._closers:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_ALL_TIMEOUT):
                await asyncio.wait(set(self._closers))

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per server: sessions open, partitions, opens, restarts, last error."""
        out: dict[str, dict[str, Any]] = {}
        for name, stats in self.stats.items():
            out[name] = {
                "opens": stats.opens,
                "restarts": stats.restarts,
                "retired": stats.retired,
                "expired": stats.expired,
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
