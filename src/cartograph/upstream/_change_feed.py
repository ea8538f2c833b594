"""How an upstream's list changes reach whoever subscribed to one session.

The two protocol eras deliver them differently: a handshake-era server sends
``notifications/*/list_changed`` on the session itself (the client's message
handler), a 2026-07-28 server only on a ``subscriptions/listen`` stream the
client has to open. The SDK also tees every listen-stream event to the message
handler; :class:`ChangeFeed` drops those there, or each change would fire twice.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable

import mcp_types as types
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    PromptsListChanged,
    ResourcesListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from cartograph.upstream.content import ContentKind

logger = logging.getLogger(__name__)

ToolsChangedCallback = Callable[[str], Awaitable[None] | None]
"""Called with the server name when the upstream reports ``tools/list_changed``."""

ContentChangedCallback = Callable[[str, ContentKind], Awaitable[None] | None]
"""Called with the server name and what changed on ``resources``/``prompts/list_changed``."""

ResourceUpdatedCallback = Callable[[str, str], Awaitable[None] | None]
"""Called with the server name and the upstream URI on ``notifications/resources/updated``."""


class ChangeFeed:
    """The change callbacks of one session, and the two ways the news arrives.

    ``ask_for_content``: the server's capabilities are unknown (pinned to a
    2026-07-28 version, the SDK skips ``server/discover``), so content changes
    are asked for anyway; the listen ack says what is honoured.
    """

    def __init__(self, server: str, *, ask_for_content: bool) -> None:
        self.server = server
        self._ask_for_content = ask_for_content
        self._tools_callbacks: list[ToolsChangedCallback] = []
        self._content_callbacks: list[ContentChangedCallback] = []
        self._updated_callbacks: list[ResourceUpdatedCallback] = []

    def on_tools_changed(self, callback: ToolsChangedCallback) -> None:
        self._tools_callbacks.append(callback)

    def on_content_changed(self, callback: ContentChangedCallback) -> None:
        self._content_callbacks.append(callback)

    def on_resource_updated(self, callback: ResourceUpdatedCallback) -> None:
        self._updated_callbacks.append(callback)

    async def on_message(self, message: IncomingMessage) -> None:
        """The client's message handler: handshake-era servers deliver list changes here."""
        if _from_listen_stream(message):
            return  # :meth:`listen` reports it
        if isinstance(message, types.ToolListChangedNotification):
            await self._fire_tools_changed()
        elif isinstance(message, types.ResourceListChangedNotification):
            await self._fire_content_changed("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            await self._fire_content_changed("prompts")
        elif isinstance(message, types.ResourceUpdatedNotification):
            await self._fire_resource_updated(message.params.uri)

    def wants_listen(self, client: Client) -> bool:
        """2026-07-28 servers deliver list changes only on a ``subscriptions/listen`` stream."""
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        return any(self._listen_filter(client).values())

    async def listen(self, client: Client) -> None:
        """Report every event of the listen stream until it ends; a lost stream is only logged."""
        wanted = self._listen_filter(client)
        try:
            async with client.listen(
                tools_list_changed=wanted["tools_list_changed"],
                resources_list_changed=wanted["resources_list_changed"],
                prompts_list_changed=wanted["prompts_list_changed"],
            ) as subscription:
                async for event in subscription:
                    if isinstance(event, ResourcesListChanged):
                        await self._fire_content_changed("resources")
                    elif isinstance(event, PromptsListChanged):
                        await self._fire_content_changed("prompts")
                    else:
                        await self._fire_tools_changed()
        except Exception as exc:  # a lost stream must not end the session
            logger.info("upstream %s: list_changed stream ended: %s", self.server, exc)

    def _listen_filter(self, client: Client) -> dict[str, bool]:
        wanted = _listen_filter(client.server_capabilities)
        if self._ask_for_content:  # the ack says what is honoured
            wanted.update(resources_list_changed=True, prompts_list_changed=True)
        return wanted

    async def _fire_content_changed(self, kind: ContentKind) -> None:
        for callback in list(self._content_callbacks):
            try:
                outcome = callback(self.server, kind)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("upstream %s: %s_changed callback failed", self.server, kind)

    async def _fire_resource_updated(self, uri: str) -> None:
        for callback in list(self._updated_callbacks):
            try:
                outcome = callback(self.server, uri)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("upstream %s: resources/updated callback failed", self.server)

    async def _fire_tools_changed(self) -> None:
        for callback in list(self._tools_callbacks):
            try:
                outcome = callback(self.server)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("upstream %s: tools_changed callback failed", self.server)


def _from_listen_stream(message: IncomingMessage) -> bool:
    """A 2026-07-28 listen-stream event carries its subscription id in ``_meta``."""
    params = getattr(message, "params", None)
    meta = getattr(params, "meta", None) if params is not None else None
    return meta is not None and SUBSCRIPTION_ID_META_KEY in meta


def _listen_filter(caps: types.ServerCapabilities) -> dict[str, bool]:
    """The ``subscriptions/listen`` kinds worth asking for: those the server says change."""
    return {
        "tools_list_changed": bool(caps.tools is not None and caps.tools.list_changed),
        "resources_list_changed": bool(caps.resources is not None and caps.resources.list_changed),
        "prompts_list_changed": bool(caps.prompts is not None and caps.prompts.list_changed),
    }


__all__ = [
    "ChangeFeed",
    "ContentChangedCallback",
    "ResourceUpdatedCallback",
    "ToolsChangedCallback",
]
