"""A catalog's background upkeep: re-list every live session, then expire the idle ones.

The re-list is what catches a rug pull the upstream does not announce (or
cannot: a 2026-07-28 SDK server advertises no ``tools.listChanged``), so drift
detection never depends on the protocol era. Only pooled mode keeps sessions to
re-list; the runtime starts this only there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import anyio

logger = logging.getLogger(__name__)


class Maintenance:
    """One background task per catalog, every ``interval`` seconds: ``relist``, then ``sweep``."""

    def __init__(
        self,
        catalog: str,
        interval: float,
        relist: Callable[[], Awaitable[None]],
        sweep: Callable[[], Awaitable[None]],
    ) -> None:
        self.catalog = catalog
        self.interval = interval
        self._relist = relist
        self._sweep = sweep
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the loop (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(
                self._run(), name=f"cartograph:maintain:{self.catalog}"
            )

    async def aclose(self) -> None:
        """Stop the loop and wait until it has stopped."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await anyio.sleep(self.interval)
            try:
                await self._relist()
                await self._sweep()
            except Exception:  # the maintenance loop must outlive any one failure
                logger.exception("catalog %s: periodic re-list failed", self.catalog)
