"""The load driver for the fleet of :mod:`tests.helpers.fleet`: SDK clients and what they saw.

Shared by ``tests/fleet`` and ``benchmarks/fleet_load.py``. :func:`drive` runs
SDK streamable-HTTP clients, each call tagged with a unique W3C
``traceparent`` that the replicas write into the audit record, so "exactly
one audit record per answered call" is checked call by call, not by totals.
Every failed attempt keeps where and why it failed (:class:`Attempt`), so a
run's failures group by cause rather than by count.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2

from tests.helpers.fleet import Mode

MODERN = "2026-07-28"


def traceparent() -> str:
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


@dataclass
class Attempt:
    """One try at one step of a client's work; a failed one says where and why it failed.

    ``phase`` is what the client was doing: ``initialize`` (opening a session),
    ``list`` (``tools/list``), ``call`` (``tools/call``) or ``close`` (ending it).
    A failure keeps the exception type (``kind``, or ``isError`` for an error
    result), the JSON-RPC error code, Cartograph's code from the error data,
    the message, and the HTTP status of a non-2xx response the client got
    during that attempt (the SDK turns e.g. a balancer's 503 page into a bare
    ``MCPError`` "Server returned an error response").
    """

    client: int
    trace: str
    ok: bool
    seconds: float
    error: str = ""
    phase: str = "call"
    kind: str = ""
    rpc_code: int | None = None
    code: str = ""
    http: str = ""
    at: float = 0.0
    """When the attempt ended, seconds since the load started."""
    session: str = ""
    """The ``Mcp-Session-Id`` the attempt ran in ("" before the server assigned one)."""

    @property
    def cause(self) -> str:
        """The failure's grouping key: phase, kind, codes, HTTP status, message shape."""
        parts = [self.phase, self.kind]
        if self.rpc_code is not None:
            parts.append(f"rpc {self.rpc_code}")
        if self.code:
            parts.append(self.code)
        if self.http:
            parts.append(self.http)
        message = re.sub(r"[0-9a-f]{8,}|\d+(\.\d+)?", "#", self.error)
        return " | ".join([*parts, message[:120]])


@dataclass
class Load:
    """What the clients saw: every attempt, in completion order."""

    attempts: list[Attempt] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    gave_up: list[int] = field(default_factory=list)
    """Clients that stopped short of their calls: every session they opened failed."""

    @property
    def answered(self) -> list[Attempt]:
        return [a for a in self.attempts if a.ok]

    @property
    def failed(self) -> list[Attempt]:
        return [a for a in self.attempts if not a.ok]

    @property
    def rate(self) -> float:
        return len(self.answered) / max(self.ended - self.started, 1e-9)

    def causes(self) -> dict[str, int]:
        """Failed attempts grouped by :attr:`Attempt.cause`, most frequent first."""
        return dict(Counter(a.cause for a in self.failed).most_common())


Hook = Callable[[int], Awaitable[None]]


async def drive(
    url: str,
    clients: int,
    calls: int,
    *,
    mode: Mode,
    on_progress: Hook | None = None,
    retries: int = 3,
) -> Load:
    """``clients`` SDK clients x ``calls`` answered calls each; a failed call is retried.

    Each session lists the tools once (the SDK would otherwise list them inside
    the first ``call_tool`` to validate its result, hiding a failed list behind
    the call), then calls. A sticky client whose replica is gone opens a new
    session (the balancer places it elsewhere). ``on_progress(answered)`` runs
    after every answered call.
    """
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    load = Load(started=time.monotonic())
    in_flight: dict[int, str] = {}
    answered = [0] * clients  # per client, kept across its sessions
    protocol = MODERN if mode == "stateless" else "legacy"

    # A sticky session whose replica died cannot recover: open a new one at once.
    in_session = retries if mode == "stateless" else 0

    async def one(index: int) -> None:
        sessions = retries + 1
        client = _Client(index, load, in_flight)
        while answered[index] < calls:
            client.session = ""
            async with _http_client(client) as http:
                transport = streamable_http_client(url, http_client=http)
                try:
                    client.phase, client.started = "initialize", time.monotonic()
                    async with Client(transport, mode=protocol, read_timeout_seconds=60) as c:
                        if await client.attempt("list", c.list_tools):
                            await _calls(c, client, answered, calls, on_progress, in_session)
                        client.phase = "close"
                except Exception as exc:  # the SDK ends the session when a request's stream dies
                    client.failed(in_flight.pop(index, ""), exc)
            sessions -= 1 if answered[index] < calls else 0
            if sessions < 0:
                load.gave_up.append(index)  # its attempts say why; the others carry on
                return

    async with anyio.create_task_group() as group:
        for index in range(clients):
            group.start_soon(one, index)
    load.ended = time.monotonic()
    return load


async def call_once(url: str) -> Attempt:
    """One stateless ``call`` through ``url``, no retry: what a client sees right now."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    load = Load(started=time.monotonic())
    client = _Client(0, load, {})
    async with _http_client(client) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=MODERN, read_timeout_seconds=60) as session:
            client.phase, client.started = "call", time.monotonic()
            trace = traceparent()
            arguments = {"server": "calc", "tool": "echo", "arguments": {"text": "once"}}
            meta: Any = {"traceparent": trace}  # the SDK types _meta as its own mapping
            try:
                result = await session.call_tool("call", arguments, meta=meta)
            except Exception as exc:
                client.failed(trace, exc)
            else:
                if result.is_error:
                    client.failed(trace, None, result)
                else:
                    return Attempt(0, trace, True, time.monotonic() - client.started)
    return load.attempts[-1]


@dataclass
class _Client:
    """One load client's bookkeeping: what it is doing and the HTTP errors it saw doing it."""

    index: int
    load: Load
    in_flight: dict[int, str]
    phase: str = "initialize"
    started: float = 0.0
    http: list[str] = field(default_factory=list)
    session: str = ""

    async def attempt(self, phase: str, step: Callable[[], Awaitable[Any]]) -> bool:
        """Run one step that is not a call (e.g. ``tools/list``); record it only if it fails."""
        self.phase, self.started, self.http = phase, time.monotonic(), []
        try:
            await step()
        except Exception as exc:
            self.failed("", exc)
            return False
        return True

    def failed(self, trace: str, exc: BaseException | None, result: Any = None) -> None:
        kind, rpc_code, code, message = _classify(exc, result)
        self.load.attempts.append(
            Attempt(
                self.index,
                trace,
                False,
                time.monotonic() - self.started,
                message,
                phase=self.phase,
                kind=kind,
                rpc_code=rpc_code,
                code=code,
                http="; ".join(dict.fromkeys(self.http)),
                at=time.monotonic() - self.load.started,
                session=self.session,
            )
        )
        self.http = []


def _http_client(client: _Client) -> httpx2.AsyncClient:
    """The SDK's HTTP client settings, plus a hook noting every non-2xx response."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    async def note(response: httpx2.Response) -> None:
        client.session = response.headers.get("mcp-session-id", client.session)
        if response.status_code < 400:
            return
        method = ""
        with contextlib.suppress(Exception):
            method = str(json.loads(response.request.content).get("method", ""))
        body = ""
        if not response.headers.get("content-type", "").startswith("application/json"):
            with contextlib.suppress(Exception):  # e.g. HAProxy's HTML error page: its title
                text = (await response.aread()).decode("utf-8", "replace")
                found = re.search(r"<h1>(.*?)</h1>", text)
                body = found.group(1) if found else text[:60]
        client.http.append(f"HTTP {response.status_code} {method} {body}".strip())

    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        event_hooks={"response": [note]},
    )


def _classify(exc: BaseException | None, result: Any) -> tuple[str, int | None, str, str]:
    """(kind, JSON-RPC code, Cartograph code, message) of a failed attempt."""
    if exc is None:
        structured = getattr(result, "structured_content", None) or {}
        error = structured.get("error") if isinstance(structured, dict) else None
        code = str(error.get("code", "")) if isinstance(error, dict) else ""
        return "isError", None, code, _text(result)
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "ExceptionGroup", None, "", _describe(exc)
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        data = exc.data
        code = str(data.get("code", "")) if isinstance(data, dict) else ""
        return type(exc).__name__, exc.code, code, exc.message[:200]
    return type(exc).__name__, None, "", str(exc)[:200]


async def _calls(
    session: Any,
    client: _Client,
    answered: list[int],
    calls: int,
    on_progress: Hook | None,
    retries: int,
) -> None:
    failures, index, load = 0, client.index, client.load
    while answered[index] < calls:
        trace = client.in_flight[index] = traceparent()
        client.phase, client.started, client.http = "call", time.monotonic(), []
        text = f"c{index}-{answered[index]}"
        arguments = {"server": "calc", "tool": "echo", "arguments": {"text": text}}
        try:
            result = await session.call_tool("call", arguments, meta={"traceparent": trace})
        except Exception as exc:
            del client.in_flight[index]
            client.failed(trace, exc)
        else:
            del client.in_flight[index]
            if not result.is_error:
                seconds = time.monotonic() - client.started
                load.attempts.append(Attempt(index, trace, True, seconds, session=client.session))
                answered[index] += 1
                failures = 0
                if on_progress is not None:
                    await on_progress(len(load.answered))
                continue
            client.failed(trace, None, result)
        failures += 1
        if failures > retries:
            return  # let the caller open a new session


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)[:200]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"[:200]
