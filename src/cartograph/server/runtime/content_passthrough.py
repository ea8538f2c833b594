"""A catalog runtime's resource and prompt passthrough: list, read, render, bounded.

:class:`ContentPassthrough` is a component the
:class:`~cartograph.server.runtime.catalog.CatalogRuntime` holds (``runtime.passthrough``),
handed what it reads: the catalog's config, servers, current cards, content
listings and gateway. It adds no state of its own; the subscriptions it holds
live in :class:`~cartograph.server.passthrough.CatalogContent`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TypeVar

from mcp.types import (
    CompleteResult,
    CompletionArgument,
    GetPromptResult,
    PromptReference,
    ReadResourceResult,
    ResourceTemplateReference,
)

from cartograph import error_codes as codes
from cartograph.cards.verified import VerifiedCards
from cartograph.config.model import Config, ServerConfig
from cartograph.echo import echoed
from cartograph.errors import CartographError, ResultTooLarge, UnknownToolError
from cartograph.gateway.gateway import Gateway
from cartograph.gateway.pool import SHARED_PARTITION, Upstream, partition_key
from cartograph.server.passthrough import CatalogContent
from cartograph.upstream.content import ContentListing

logger = logging.getLogger(__name__)

_Content = TypeVar("_Content", ReadResourceResult, GetPromptResult)


class ContentPassthrough:
    """Resources and prompts of a catalog's carded servers, through the gateway."""

    def __init__(
        self,
        *,
        name: str,
        config: Config,
        servers: Mapping[str, ServerConfig],
        cards: Callable[[], VerifiedCards],
        content: CatalogContent,
        gateway: Gateway,
    ) -> None:
        self.name = name
        self.config = config
        self.servers = servers
        self._cards = cards
        self.content = content
        self.gateway = gateway

    @property
    def cards(self) -> VerifiedCards:
        """The runtime's cards as they are now (a reload swaps them)."""
        return self._cards()

    def content_listings(self) -> list[tuple[str, ContentListing]]:
        """Each listed server's resources and prompts, in config order.

        Only servers whose card verified: content is not attested itself, but a
        server the operator has not attested (or whose card was refused) serves
        nothing at all.
        """
        listings = self.content.listings
        return [(s, listings[s]) for s in self.servers if s in listings and s in self.cards]

    def _content_server(self, server: str, what: str) -> None:
        if server not in self.servers or server not in self.cards:
            raise UnknownToolError(
                f"no server {echoed(server)!r} in catalog {self.name!r} serves {what}; "
                "list them again (resources/list, prompts/list)",
                code=codes.UNKNOWN_SERVER,
                server=server,
            )

    async def read_resource(
        self, server: str, uri: str, *, principal: str | None = None, client: str | None = None
    ) -> ReadResourceResult:
        """Read ``uri`` from ``server`` through the gateway (breaker, deadline, pool partition)."""
        self._content_server(server, "resources")
        timeout = self.servers[server].call_timeout

        async def read(session: Upstream) -> ReadResourceResult:
            return await session.read_resource(uri, timeout=timeout)

        result = await self.gateway.request(
            server, read, client=partition_key(principal, client), what="resources/read"
        )
        return self._bounded(server, "resources/read", result)

    async def get_prompt(
        self,
        server: str,
        name: str,
        arguments: dict[str, str] | None,
        *,
        principal: str | None = None,
        client: str | None = None,
    ) -> GetPromptResult:
        """Render prompt ``name`` of ``server`` through the gateway."""
        self._content_server(server, "prompts")
        timeout = self.servers[server].call_timeout

        async def get(session: Upstream) -> GetPromptResult:
            return await session.get_prompt(name, arguments, timeout=timeout)

        what = f"prompts/get {echoed(name)}"
        result = await self.gateway.request(
            server, get, client=partition_key(principal, client), what=what
        )
        return self._bounded(server, what, result)

    async def complete(
        self,
        server: str,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        principal: str | None = None,
        client: str | None = None,
    ) -> CompleteResult:
        """Ask ``server`` to complete ``argument`` of ``ref`` (its own names) through the gateway.

        The values come back as the upstream gave them: they are argument values,
        not names Cartograph namespaces. The SDK's ``Completion`` caps them at 100.
        """
        kind = "prompts" if isinstance(ref, PromptReference) else "resources"
        self._content_server(server, kind)
        timeout = self.servers[server].call_timeout

        async def complete(session: Upstream) -> CompleteResult:
            return await session.complete(ref, argument, context_arguments, timeout=timeout)

        what = f"completion/complete {echoed(argument.name)}"
        return await self.gateway.request(
            server, complete, client=partition_key(principal, client), what=what
        )

    async def subscribe_resource(
        self, server: str, uri: str, *, principal: str | None = None, client: str | None = None
    ) -> None:
        """Subscribe the client's upstream session to ``uri``; its updates reach ``content``.

        Held before it is forwarded, so the per-session cap cannot be overshot by
        concurrent requests and a session ending meanwhile still releases it.
        """
        self._content_server(server, "resources")
        partition = partition_key(principal, client)
        limit = self.config.gateway.max_subscriptions_per_session
        new = self.content.hold(server, uri, partition or "", limit=limit)
        try:
            await self._subscription(server, uri, partition, subscribe=True)
        except BaseException:
            if new:  # never subscribed upstream: nothing to forward
                self.content.release(server, uri, partition or "")
            raise

    async def unsubscribe_resource(
        self, server: str, uri: str, *, principal: str | None = None, client: str | None = None
    ) -> None:
        """Forward the unsubscribe once no other client of this catalog holds ``uri``
        (a client's own upstream session, not shared, is always told)."""
        self._content_server(server, "resources")
        partition = partition_key(principal, client)
        last = self.content.release(server, uri, partition or "")
        if last or not self._shared(server, partition):
            await self._subscription(server, uri, partition, subscribe=False)

    async def release_subscriptions(self, client: str) -> None:
        """Downstream ``client`` ended (an HTTP session: DELETE, idle expiry, the connection).

        Its subscriptions are dropped; a shared upstream session is sent the
        unsubscribe of each URI no other client holds. A client's own upstream
        session is not: the gateway closes it next, and its subscriptions with it.
        """
        for server, uri, holder in self.content.release_client(client):
            if server not in self.servers or not self._shared(server, holder):
                continue
            try:
                await self._subscription(server, uri, holder, subscribe=False)
            except CartographError as exc:  # the upstream may be gone: nothing to keep
                logger.warning("releasing a subscription of %s failed: %s", server, exc.code)

    def _shared(self, server: str, partition: str | None) -> bool:
        return self.gateway.partition_for(server, partition) == SHARED_PARTITION

    async def _subscription(
        self, server: str, uri: str, partition: str | None, *, subscribe: bool
    ) -> None:
        timeout = self.servers[server].call_timeout

        async def send(session: Upstream) -> None:
            if subscribe:
                await session.subscribe_resource(uri, timeout=timeout)
            else:
                await session.unsubscribe_resource(uri, timeout=timeout)

        what = "resources/subscribe" if subscribe else "resources/unsubscribe"
        await self.gateway.request(server, send, client=partition, what=what)

    def _bounded(self, server: str, what: str, result: _Content) -> _Content:
        """Refuse (never cut) a read or prompt over ``[gateway] max_result_bytes``."""
        limit = self.config.gateway.max_result_bytes
        size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))
        if size > limit:
            raise ResultTooLarge(
                f"upstream {server!r}: {what} answered {size} bytes, over [gateway] "
                f"max_result_bytes = {limit}; raise the limit to receive it",
                server=server,
                size=size,
                limit=limit,
            )
        return result
