"""The SDK's streamable-HTTP session manager with 256-bit session ids (P-HTTP-4).

mcp 2.3.0 mints session ids with ``uuid4().hex``: 122 random bits, short of the
128 P-HTTP-4 asks for. Everything else (404 for unknown or terminated
sessions, refusing a session presented by another principal, idle expiry) is
the SDK's own and stays so; only the minting is replaced. ``mcp`` is pinned
exactly in ``pyproject.toml`` and a test pins this override's effect.
"""

from __future__ import annotations

import secrets
from typing import Final

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

SESSION_ID_BYTES: Final = 32
"""Random bytes per session id: 256 bits, rendered as 64 lower-case hex characters."""


def new_session_id() -> str:
    return secrets.token_hex(SESSION_ID_BYTES)


class SessionManager(StreamableHTTPSessionManager):
    """``StreamableHTTPSessionManager`` minting session ids from ``secrets``."""

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
