"""The SDK's streamable-HTTP session manager with 256-bit session ids (P-HTTP-4).

mcp 2.3.0 mints session ids with ``uuid4().hex``: 122 random bits, short of the
128 P-HTTP-4 asks for. Everything else (404 for unknown or terminated
sessions, refusing a session presented by another principal, idle expiry) is
the SDK's own and stays so; only the minting is replaced. ``mcp`` is pinned
exactly in ``pyproject.toml`` and a test pins this override's effect.
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

logger = logging.getLogger(__name__)

SESSION_ID_BYTES: Final = 32
"""Random bytes per session id: 256 bits, rendered as 64 lower-case hex characters."""


def new_session_id() -> str:
    return secrets.token_hex(SESSION_ID_BYTES)


SessionEnded = Callable[[str], Awaitable[None]]
"""Called with the session id once an HTTP MCP session is gone (DELETE, idle expiry, crash)."""


class SessionManager(StreamableHTTPSessionManager):
    """``StreamableHTTPSessionManager`` minting session ids from ``secrets``.

    ``on_session_end`` lets the gateway close the upstream sessions it opened
    for that downstream client (P-POOL-1); it hooks ``_discard_session``, the
    one place the SDK forgets a session however it ended.
    """

    def __init__(self, *args: Any, on_session_end: SessionEnded | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._on_session_end = on_session_end

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        known = session_id in self._server_instances
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
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
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
        self._server_instances[session_id] = transport
        return transport
