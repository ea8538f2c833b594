"""Forwarding an upstream's ``resources``/``prompts`` ``list_changed`` to connected clients.

The two protocol eras deliver change notifications differently: a
handshake-era client (stdio, or an HTTP session with ``Mcp-Session-Id``)
receives them on its connection's standalone channel, whenever the server
sends them; a 2026-07-28 client asks for them with ``subscriptions/listen``
and receives them on that request's stream. :class:`ChangeNotifier` does
both: it remembers each handshake-era connection as it speaks (a middleware
on the mount's SDK server) and publishes every change on the SDK's
subscription bus, which the mount's ``subscriptions/listen`` handler serves.
It also keeps which connection subscribed to which resource
(``resources/subscribe``, handshake era only) and forwards an upstream's
``notifications/resources/updated`` to those connections alone.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from cartograph.upstream.content import ContentKind

logger = logging.getLogger(__name__)

NOTIFY_TIMEOUT: Final = 5.0
"""A client that does not take a notification within this long is dropped from the list."""


class ChangeNotifier:
    """One mount's list of connected clients, and how to tell them a listing changed."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self._sessions: dict[str, ServerSession] = {}
        self._subscribed: dict[str, set[str]] = {}

    def remember(self, client: str, session: ServerSession) -> None:
        """``client`` (stdio: ``local``; HTTP: its session key) speaks the handshake era."""
        self._sessions[client] = session

    def forget(self, client: str) -> None:
        """The client is gone (its HTTP session ended)."""
        self._sessions.pop(client, None)
        self._subscribed.pop(client, None)

    def subscribed(self, client: str, uri: str) -> None:
        """``client`` subscribed to ``uri`` (``resources/subscribe``, handshake era)."""
        self._subscribed.setdefault(client, set()).add(uri)

    def unsubscribed(self, client: str, uri: str) -> None:
        self._subscribed.get(client, set()).discard(uri)

    async def resource_updated(self, uri: str) -> None:
        """Tell each client subscribed to ``uri`` that it changed (``resources/updated``)."""
        for client, uris in list(self._subscribed.items()):
            session = self._sessions.get(client)
            if uri not in uris or session is None:
                continue
            delivered = False
            with anyio.move_on_after(NOTIFY_TIMEOUT):
                try:
                    await session.send_resource_updated(uri)
                    delivered = True
                except Exception as exc:  # the connection is gone: stop telling it
                    logger.debug("dropping %s from resources/updated: %s", client, exc)
            if not delivered:
                self.forget(client)

    @property
    def clients(self) -> tuple[str, ...]:
        return tuple(self._sessions)

    async def __call__(self, kind: ContentKind) -> None:
        """Tell every client that ``kind`` changed: listen streams, then each session."""
        await self.bus.publish(
            PromptsListChanged() if kind == "prompts" else ResourcesListChanged()
        )
        for client, session in list(self._sessions.items()):
            delivered = False
            with anyio.move_on_after(NOTIFY_TIMEOUT):
                try:
                    if kind == "prompts":
                        await session.send_prompt_list_changed()
                    else:
                        await session.send_resource_list_changed()
                    delivered = True
                except Exception as exc:  # the connection is gone: stop telling it
                    logger.debug("dropping %s from list_changed: %s", client, exc)
            if not delivered:
                self.forget(client)


def remembering(
    notifier: ChangeNotifier, client_of: Any
) -> Any:  # a ServerMiddleware; the SDK types it as a Protocol generic in the lifespan
    """A middleware that records each handshake-era connection as it sends a message."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "initialize" and ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
            client = client_of(ctx)
            if client is not None:
                notifier.remember(client, ctx.session)
        return await call_next(ctx)

    return middleware
