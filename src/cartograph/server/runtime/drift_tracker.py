"""Each listed tool's standing against its card, kept current as upstreams change.

Whenever a session (re)opens, an upstream reports ``tools/list_changed``, or
the periodic re-list runs, the server's tools are re-listed and compared with
its card into one :class:`~cartograph.cards.drift.DriftView`, shared by
``discover``, ``call`` and ``status``. Split from the runtime: this holds the
drift state; the runtime decides what a change means for the index.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

import anyio

from cartograph.cards.drift import DriftReport, DriftView, check_server_drift
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import ServerDef
from cartograph.errors import CartographError
from cartograph.gateway.pool import Upstream
from cartograph.server.refresher import CoalescingRefresher

logger = logging.getLogger(__name__)


class DriftTracker:
    """Live listings, the servers not yet compared, and the drift view they feed.

    ``cards`` returns the catalog's current verified cards (they can be
    replaced after start); ``on_change`` runs when a listing changed which
    tools are withheld.
    """

    def __init__(self, cards: Callable[[], VerifiedCards], on_change: Callable[[], None]) -> None:
        self._cards = cards
        self._on_change = on_change
        self.view = DriftView()
        self.live: dict[str, ServerDef] = {}
        self.unchecked: set[str] = set()
        """Servers whose live listing has not been compared with their card yet."""
        self._relists = CoalescingRefresher()

    @property
    def report(self) -> DriftReport:
        """The current drift report (read from the one :attr:`view`)."""
        return self.view.report

    async def on_open(self, server: str, session: Upstream, restarted: bool) -> None:
        """After every (re)open: re-list, re-check drift, follow list_changed."""
        await self.refresh(server, session)
        subscribe: Callable[[Callable[[str], Awaitable[None]]], None] | None = getattr(
            session, "on_tools_changed", None
        )
        if subscribe is not None:

            async def changed(_name: str, session: Upstream = session) -> None:
                await self._on_tools_changed(server, session)

            subscribe(changed)

    async def _on_tools_changed(self, server: str, session: Upstream) -> None:
        """Coalesced: a flood of notifications costs one re-list in flight plus one after."""
        try:
            await self._relists.trigger(server, lambda: self.refresh(server, session))
        except CartographError as exc:
            logger.warning("re-listing %s after list_changed failed: %s", server, exc.code)

    async def refresh(self, server: str, session: Upstream) -> None:
        """Re-list ``server`` on ``session`` and fold the listing into the view."""
        live: ServerDef = await session.list_tools()
        if self.apply_listing(server, live):
            self._on_change()

    async def relist(self, sessions: Iterable[tuple[str, Upstream]]) -> None:
        """Re-list every given live session at once; a failure is logged, never raised."""

        async def one(server: str, session: Upstream) -> None:
            try:
                await self.refresh(server, session)
            except CartographError as exc:
                logger.warning("periodic re-list of %s failed: %s", server, exc.code)

        async with anyio.create_task_group() as group:
            for server, session in sessions:
                group.start_soon(one, server, session)

    def apply_listing(self, server: str, live: ServerDef) -> bool:
        """Compare ``server``'s listing (live, or from a catalog snapshot) with its card.

        Returns True when that changed which tools are withheld.
        """
        self.unchecked.discard(server)
        self.live[server] = live
        fresh = check_server_drift(self._cards(), server, list(live.tools))
        return self.view.update_server(server, fresh)


__all__ = ["DriftTracker"]
