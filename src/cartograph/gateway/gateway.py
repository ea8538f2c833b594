"""The gateway: every upstream call goes through here, pooled or one-shot.

Per upstream it keeps a circuit breaker and a bulkhead; every call has a
deadline. In pooled mode
sessions come from an :class:`~cartograph.gateway.pool.UpstreamPool`; in
one-shot mode each call spawns, connects, lists (to re-check drift), invokes
and tears down, exactly as the paper's gateway did — kept so the two can be
measured side by side.

The gateway raises typed :class:`~cartograph.errors.UpstreamError`\\ s and
never decides policy, attestation or argument validity: the call pipeline
(:mod:`cartograph.calls.pipeline`) does that before any call reaches here,
and hands the gateway its ``drift`` check to re-run after every (re)open.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import anyio
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import CallToolResult
from opentelemetry.trace import Span

from cartograph import error_codes as codes
from cartograph.config.model import GatewayConfig, ServerConfig
from cartograph.errors import (
    UpstreamError,
    UpstreamRefused,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from cartograph.gateway.audit import Redactor
from cartograph.gateway.limits import Bulkhead, CircuitBreaker
from cartograph.gateway.pool import (
    SESSIONLESS_CLIENT,
    SHARED_PARTITION,
    Opener,
    OpenHook,
    PoolLimits,
    Upstream,
    UpstreamPool,
    client_of,
    default_opener,
)
from cartograph.telemetry import finish, span
from cartograph.telemetry.spans import OUTCOME_OK, TOOL_ERROR

DEADLINE_MARGIN: Final = 0.5
"""Slack on top of a server's call_timeout before the gateway's own deadline fires."""
Admit = Callable[[str, str], None]
"""Raises when (server, tool) may not be called *now*: re-run after every (re)open, since a
restarted upstream may have changed its tools under us."""

_T = TypeVar("_T")
Operation = Callable[[Upstream], Awaitable[_T]]
"""One request on an upstream session, run under the gateway's guards."""

RESTARTABLE_CODES: Final = frozenset({codes.UPSTREAM_SESSION_CLOSED})
"""Failures that provably happened before the request left: safe to restart and resend."""


@dataclass
class OneShotTiming:
    """Where one-shot time goes (paper §5.5): open = spawn + handshake, list, call, close."""

    open_ms: float = 0.0
    list_ms: float = 0.0
    call_ms: float = 0.0
    close_ms: float = 0.0


@dataclass
class _Guard:
    breaker: CircuitBreaker
    bulkhead: Bulkhead
    calls: int = 0
    failures: int = 0
    last_error: str | None = None


@dataclass
class _InFlight:
    scopes: set[anyio.CancelScope] = field(default_factory=set)
    idle: anyio.Event = field(default_factory=anyio.Event)


class Gateway:
    """Calls upstream tools with deadlines, breakers, backpressure and size limits."""

    def __init__(
        self,
        settings: GatewayConfig,
        servers: Sequence[ServerConfig],
        *,
        opener: Opener = default_opener,
        on_open: OpenHook | None = None,
        admit: Admit | None = None,
        redactor: Redactor | None = None,
        share_sessions: bool = False,
    ) -> None:
        self.settings = settings
        self.mode = settings.mode
        self.servers = {s.name: s for s in servers}
        self._opener = opener
        self._on_open = on_open
        self._admit = admit
        self.redactor = redactor or Redactor()
        self.share_sessions = share_sessions
        self.pool = UpstreamPool(opener, on_open=on_open, limits=pool_limits(settings))
        self._guards = {s.name: self._new_guard(s.name) for s in servers}
        self._in_flight = _InFlight()
        self._closing = False
        self.last_oneshot: OneShotTiming | None = None

    def _new_guard(self, server: str) -> _Guard:
        s = self.settings
        return _Guard(
            breaker=CircuitBreaker(server, s.breaker_failures, s.breaker_cooldown),
            bulkhead=Bulkhead(server, s.max_in_flight, s.queue_size),
        )

    def partition_for(self, server: str, client: str | None) -> str | None:
        """Shared only for ``stateless`` upstreams or a single-client proxy (stdio).

        ``None`` for a downstream request with no session (2026-07-28 HTTP): it
        has nothing to share a stateful upstream session with, so it gets one
        of its own for this call alone (P-POOL-1 holds whatever the era).
        """
        cfg = self.servers[server]
        if cfg.stateless or self.share_sessions or client is None:
            return SHARED_PARTITION
        if client_of(client) == SESSIONLESS_CLIENT:
            return None
        return client

    @property
    def holds_client_state(self) -> bool:
        """True when some upstream keeps per-client sessions (stateful, not shared)."""
        return not self.share_sessions and any(not s.stateless for s in self.servers.values())

    def guard(self, server: str) -> _Guard:
        return self._guards[server]

    async def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        client: str | None = None,
        progress_callback: ProgressFnT | None = None,
    ) -> CallToolResult:
        """Forward one call; the upstream's result comes back as it came.

        Raises :class:`UpstreamError` subclasses (timeout, unavailable, protocol,
        circuit open, overloaded) with secrets redacted from their messages. The
        result's size limit and the redaction of an error result are the call
        pipeline's ``limit`` step, after this.
        """
        cfg = self._server(server)

        async def invoke(session: Upstream) -> CallToolResult:
            return await session.call_tool(
                tool, arguments, timeout=cfg.call_timeout, progress_callback=progress_callback
            )

        with upstream_span(cfg, "tools/call", tool) as current:
            result = await self._guarded(cfg, invoke, client=client, what=tool, admit=tool)
            finish(current, TOOL_ERROR if result.is_error else OUTCOME_OK)
        return result

    async def request(
        self, server: str, operation: Operation[_T], *, client: str | None, what: str
    ) -> _T:
        """Run one non-tool request (``resources/read``, ``prompts/get``) like a call.

        The same breaker, bulkhead, deadline, pool partition and shutdown
        handling as :meth:`call`; ``what`` names the request in errors. An
        upstream that answers "no" (:class:`UpstreamRefused`) is healthy: that
        does not count against its breaker.
        """
        cfg = self._server(server)
        method, _, name = what.partition(" ")
        with upstream_span(cfg, method, name or None) as current:
            answer = await self._guarded(cfg, operation, client=client, what=what, admit=None)
            finish(current, OUTCOME_OK)
            return answer

    async def _guarded(
        self,
        cfg: ServerConfig,
        operation: Operation[_T],
        *,
        client: str | None,
        what: str,
        admit: str | None,
    ) -> _T:
        guard = self._guards[cfg.name]
        guard.breaker.before_call()
        async with guard.bulkhead.slot():
            guard.calls += 1
            try:
                with self._tracked(cfg.name):
                    result = await self._dispatch(cfg, operation, client, what, admit)
            except UpstreamRefused as exc:
                guard.breaker.record_success()
                exc.message = self.redactor(exc.message)
                exc.args = (exc.message,)
                raise
            except UpstreamError as exc:
                guard.breaker.record_failure()
                guard.failures += 1
                raise self._redacted(exc, guard) from None
            except BaseException:
                # Cancelled from outside: no verdict on the upstream, but a half-open
                # probe must not stay claimed forever.
                guard.breaker.abandon()
                raise
            guard.breaker.record_success()
        return result

    def _server(self, server: str) -> ServerConfig:
        """The server's config; callers refuse an unknown server first, with its own code.

        (The call pipeline's ``known_server`` step; the content passthrough's check.)
        """
        return self.servers[server]

    async def _dispatch(
        self,
        cfg: ServerConfig,
        operation: Operation[_T],
        client: str | None,
        what: str,
        admit: str | None,
    ) -> _T:
        if self.mode == "oneshot":
            return await self._oneshot(cfg, operation, what, admit)
        partition = self.partition_for(cfg.name, client)
        if partition is None:
            return await self._oneshot(cfg, operation, what, admit)
        try:
            return await self._pooled(cfg, partition, operation, what, admit)
        except UpstreamError as exc:
            if exc.code not in RESTARTABLE_CODES:
                raise
        # The session died before our request left: restart and send it once more.
        return await self._pooled(cfg, partition, operation, what, admit)

    async def _pooled(
        self,
        cfg: ServerConfig,
        partition: str,
        operation: Operation[_T],
        what: str,
        admit: str | None,
    ) -> _T:
        session = await self.pool.get(cfg, partition)
        self._check_admitted(cfg.name, admit)
        with self.pool.leased(session):
            try:
                return await _invoke(session, cfg, operation, what)
            except UpstreamTimeout:
                # The reply may still be arriving: never reuse this session (P-REL-12).
                self.pool.retire(cfg.name, partition, session)
                raise

    def _check_admitted(self, server: str, tool: str | None) -> None:
        if self._admit is not None and tool is not None:
            self._admit(server, tool)

    async def _oneshot(
        self,
        cfg: ServerConfig,
        operation: Operation[_T],
        what: str,
        admit: str | None,
    ) -> _T:
        timing = OneShotTiming()
        started = time.perf_counter()
        session = await self._opener(cfg)
        timing.open_ms = _ms_since(started)
        try:
            mark = time.perf_counter()
            if self._on_open is not None:
                await self._on_open(cfg.name, session, False)
            timing.list_ms = _ms_since(mark)
            self._check_admitted(cfg.name, admit)
            mark = time.perf_counter()
            result = await _invoke(session, cfg, operation, what)
            timing.call_ms = _ms_since(mark)
        finally:
            mark = time.perf_counter()
            with anyio.CancelScope(shield=True):
                await session.aclose()
            timing.close_ms = _ms_since(mark)
            self.last_oneshot = timing
        return result

    @contextmanager
    def _tracked(self, server: str) -> Iterator[None]:
        """Register the call so shutdown can end it with an error (P-REL-7)."""
        if self._closing:
            raise UpstreamUnavailable(
                "the proxy is shutting down", code=codes.SHUTTING_DOWN, server=server
            )
        scope = anyio.CancelScope()
        self._in_flight.scopes.add(scope)
        try:
            with scope:
                yield
        finally:
            self._in_flight.scopes.discard(scope)
            if self._closing and not self._in_flight.scopes:
                self._in_flight.idle.set()
        if scope.cancelled_caught:
            raise UpstreamUnavailable(
                "the proxy shut down while this call was in flight; it may or may not have run",
                code=codes.SHUTTING_DOWN,
                server=server,
            )

    def _redacted(self, exc: UpstreamError, guard: _Guard) -> UpstreamError:
        exc.message = self.redactor(exc.message)
        exc.args = (exc.message,)
        exc.details = self.redactor.data(exc.details)
        guard.last_error = f"{exc.code}: {exc.message.splitlines()[0]}"
        return exc

    async def open_all(self, servers: Sequence[str] | None = None) -> dict[str, UpstreamError]:
        """Eagerly open shared sessions concurrently; return the failures by server."""
        names = list(servers) if servers is not None else list(self.servers)
        failures: dict[str, UpstreamError] = {}

        async def one(name: str) -> None:
            try:
                await self.pool.get(self.servers[name], SHARED_PARTITION)
            except UpstreamError as exc:
                failures[name] = self._redacted(exc, self._guards[name])

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)
        return failures

    def in_flight(self) -> int:
        return len(self._in_flight.scopes)

    async def wait_idle(self) -> None:
        """After :meth:`aclose`: until every in-flight call has returned its error."""
        if self._in_flight.scopes:
            await self._in_flight.idle.wait()

    def shared_session(self, server: str) -> Upstream | None:
        return self.pool.peek(server, SHARED_PARTITION)

    async def release(self, client: str) -> None:
        """The downstream client is gone: close its (stateful) upstream sessions (P-POOL-1)."""
        await self.pool.release(client)

    async def aclose(self) -> None:
        """End in-flight calls with an error, then close every upstream session."""
        self._closing = True
        for scope in list(self._in_flight.scopes):
            scope.cancel()
        await self.pool.aclose()

    def snapshot(self) -> dict[str, Any]:
        pool = self.pool.snapshot()
        servers: dict[str, Any] = {}
        for name, guard in self._guards.items():
            servers[name] = {
                "calls": guard.calls,
                "failures": guard.failures,
                "last_error": guard.last_error,
                "breaker": guard.breaker.snapshot(),
                "load": guard.bulkhead.snapshot(),
                "pool": pool.get(name, {"sessions": 0, "opens": 0, "restarts": 0}),
            }
        return {"mode": self.mode, "servers": servers}


async def _invoke(session: Upstream, cfg: ServerConfig, operation: Operation[_T], what: str) -> _T:
    try:
        with anyio.fail_after(cfg.call_timeout + DEADLINE_MARGIN):
            return await operation(session)
    except TimeoutError:
        raise UpstreamTimeout(
            f"upstream {cfg.name!r}: {what} gave no answer within {cfg.call_timeout:g}s "
            f"(raise call_timeout for {cfg.name!r} if it is just slow)",
            server=cfg.name,
            tool=what,
            timeout=cfg.call_timeout,
        ) from None


@contextmanager
def upstream_span(cfg: ServerConfig, method: str, tool: str | None) -> Iterator[Span]:
    """The upstream request's span: breaker, queue, session open and the call itself.

    A child of the request span; the MCP SDK's own client span (whose context
    reaches the upstream in ``_meta`` and, over HTTP, the ``traceparent``
    header) is a child of this one.
    """
    facts = {
        "mcp.method.name": method,
        "cartograph.server": cfg.name,
        "cartograph.tool": tool,
        "cartograph.transport": cfg.transport,
    }
    with span(f"upstream {method}", facts) as current:
        yield current


def pool_limits(settings: GatewayConfig) -> PoolLimits:
    """The pool's caps and idle expiry, from ``[gateway]``."""
    return PoolLimits(
        max_sessions=settings.max_upstream_sessions,
        max_sessions_per_principal=settings.max_upstream_sessions_per_principal,
        idle_timeout=settings.session_idle_timeout,
    )


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
