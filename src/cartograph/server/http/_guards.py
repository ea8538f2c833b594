"""Request checks that run before anything else sees a request (P-HTTP-1).

DNS rebinding defence: a ``Host`` that does not name this server gets 421
(Misdirected Request); a present ``Origin`` that is not allow-listed gets 403.
A missing ``Origin`` is accepted: non-browser MCP clients send none, and a
browser always sends one on the cross-origin requests this guard exists for.
Both checks are header-only and happen before routing, authentication, body
reading or JSON-RPC parsing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from cartograph import error_codes as codes

LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS: Final = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - names, not binds


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, str | None]:
    """``Host`` header → (lower-case host name, port or None); IPv6 brackets removed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else None
    name, sep, port = value.rpartition(":")
    return (name, port) if sep and port.isdigit() else (value, None)


class HostPolicy:
    """Which ``Host`` values name this server: loopback, the bind address, the allow-list.

    An allow-list entry without a port matches any port; with one, only that port.
    """

    def __init__(self, bind_host: str, allowed: Iterable[str] = ()) -> None:
        names = set(LOOPBACK_NAMES)
        if bind_host not in WILDCARD_BINDS:
            names.add(split_host(bind_host)[0])
        self._exact: set[tuple[str, str]] = set()
        for entry in allowed:
            name, port = split_host(entry)
            if port is None:
                names.add(name)
            else:
                self._exact.add((name, port))
        self._names = frozenset(names)

    def allows(self, host: str | None) -> bool:
        if not host:
            return False
        name, port = split_host(host)
        return name in self._names or (port is not None and (name, port) in self._exact)


class OriginPolicy:
    """Allow-listed ``Origin`` values; ``scheme://host:*`` matches any port."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        self._exact = frozenset(o.lower().rstrip("/") for o in allowed if not o.endswith(":*"))
        self._any_port = tuple(o.lower()[:-2] + ":" for o in allowed if o.endswith(":*"))

    def allows(self, origin: str | None) -> bool:
        if origin is None:
            return True
        value = origin.lower().rstrip("/")
        if value in self._exact:
            return True
        return any(value.startswith(p) and value[len(p) :].isdigit() for p in self._any_port)


Refused = Callable[[Scope, int, str], Awaitable[None]]
"""Told of each refusal (scope, status, code) so it can be audited (P-AUDIT-1)."""


class GuardMiddleware:
    """421 for a foreign ``Host``, 403 for a foreign ``Origin``; nothing else is touched."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: HostPolicy,
        origins: OriginPolicy,
        on_refuse: Refused | None = None,
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins
        self.on_refuse = on_refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not self.hosts.allows(headers.get("host")):
            refusal = (421, codes.MISDIRECTED_HOST, "Host header does not name this server.")
        elif not self.origins.allows(headers.get("origin")):
            refusal = (
                403,
                codes.ORIGIN_FORBIDDEN,
                "Origin is not allow-listed (http.allowed_origins).",
            )
        else:
            await self.app(scope, receive, send)
            return
        status, code, message = refusal
        if self.on_refuse is not None:
            await self.on_refuse(scope, status, code)
        response = JSONResponse({"error": {"code": code, "message": message}}, status_code=status)
        await response(scope, receive, send)
