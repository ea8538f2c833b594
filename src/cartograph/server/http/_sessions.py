"""The SDK's streamable-HTTP session manager with 256-bit session ids (P-HTTP-4).

mcp 2.3.0 mints session ids with ``uuid4().hex``: 122 random bits, short of the
128 P-HTTP-4 asks for. Everything else (404 for unknown or terminated
sessions, refusing a session presented by another principal, idle expiry) is
the SDK's own and stays so; only the minting is replaced. ``mcp`` is pinned
exactly in ``pyproject.toml`` and a test pins this override's effect.

It also bounds sessions per principal (P-REL-12): the SDK caps only the total.
:meth:`SessionManager.check_capacity` lets the HTTP layer refuse an opening
request with its own ``session_limit`` code before the SDK sees it; admission
re-checks under the SDK's lock, so concurrent opens cannot overshoot either cap.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers

from cartograph.errors import SessionLimitError
from cartograph.server.auth import ANONYMOUS

logger = logging.getLogger(__name__)

SESSION_ID_BYTES: Final = 32
"""Random bytes per session id: 256 bits, rendered as 64 lower-case hex characters."""


def new_session_id() -> str:
    return secrets.token_hex(SESSION_ID_BYTES)


MCP_SESSION_ID_HEADER: Final = "mcp-session-id"


def opens_session(headers: Headers) -> bool:
    """True for a request that would open a new handshake-era session (no session id yet)."""
    if MCP_SESSION_ID_HEADER in headers:
        return False
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def _principal_name(requestor: AuthorizationContext | None) -> str:
    return requestor["client_id"] if requestor is not None else ANONYMOUS.name


SessionEnded = Callable[[str], Awaitable[None]]
"""Called with the session id once an HTTP MCP session is gone (DELETE, idle expiry, crash)."""


class SessionManager(StreamableHTTPSessionManager):
    """``StreamableHTTPSessionManager`` minting session ids from ``secrets``.

    ``on_session_end`` lets the gateway close the upstream sessions it opened
    for that downstream client (P-POOL-1); it hooks ``_discard_session``, the
    one place the SDK forgets a session however it ended.
    """

    def __init__(
        self,
        *args: Any,
        on_session_end: SessionEnded | None = None,
        max_sessions_per_principal: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self._on_session_end = on_session_end
        self.max_sessions_per_principal = max_sessions_per_principal
        self._principals: dict[str, str] = {}

    def sessions_of(self, principal: str) -> int:
        return sum(1 for owner in self._principals.values() if owner == principal)

    def check_capacity(self, principal: str) -> None:
        """Raise :class:`SessionLimitError` when ``principal`` may not open one more session."""
        total, mine = len(self._server_instances), self.sessions_of(principal)
        if self.max_sessions is not None and total >= self.max_sessions:
            raise SessionLimitError(
                f"this server already holds {total} MCP sessions ([gateway] max_sessions = "
                f"{self.max_sessions}); retry later, or end idle sessions with DELETE",
                setting="max_sessions",
                limit=self.max_sessions,
            )
        cap = self.max_sessions_per_principal
        if cap is not None and mine >= cap:
            raise SessionLimitError(
                f"principal {principal!r} already holds {mine} MCP sessions ([gateway] "
                f"max_sessions_per_principal = {cap}); end idle ones with DELETE (unused "
                "sessions expire after [gateway] session_idle_timeout)",
                setting="max_sessions_per_principal",
                limit=cap,
            )

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        known = session_id in self._server_instances
        self._principals.pop(session_id, None)
        await super()._discard_session(session_id, transport)
        if known and self._on_session_end is not None:
            with anyio.CancelScope(shield=True):
                try:
                    await self._on_session_end(session_id)
                except Exception:  # releasing must never break the HTTP layer
                    logger.exception("releasing upstream sessions of %s failed", session_id[:8])

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        try:
            self.check_capacity(_principal_name(requestor))
        except SessionLimitError:
            return None  # the SDK answers 503; the HTTP layer's check normally came first
        session_id = new_session_id()
        transport = StreamableHTTPServerTransport(
            mcp_session_id=session_id,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )
        if requestor is not None:
            self._session_owners[session_id] = requestor
        self._principals[session_id] = _principal_name(requestor)
        self._server_instances[session_id] = transport
        return transport
