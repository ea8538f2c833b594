"""The index a catalog serves, rebuilt when the set of servable tools changes.

Split from the runtime: this holds the built :class:`ToolIndex`, the
exclusions it was built with, and the one background rebuild (a change during
a rebuild queues exactly one more). ``discover`` reads :attr:`current` and
hides tools blocked since :attr:`excluded` was taken (:meth:`stale`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from cartograph.index.tool_index import ToolIndex

logger = logging.getLogger(__name__)

ToolKey = tuple[str, str]


class ServingIndex:
    """One catalog's current index and its rebuilds (``name`` labels tasks and logs)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.current: ToolIndex | None = None
        self.excluded: frozenset[ToolKey] | None = None
        """The tools left out of :attr:`current` when it was built."""
        self._lock = anyio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._again = False

    async def rebuild(
        self,
        excluded: frozenset[ToolKey],
        build: Callable[[frozenset[ToolKey]], Awaitable[ToolIndex]],
    ) -> bool:
        """Build without ``excluded`` unless the current index already is; True if rebuilt."""
        async with self._lock:
            if self.current is not None and excluded == self.excluded:
                return False
            self.current = await build(excluded)
            self.excluded = excluded
            return True

    def stale(self, blocked: frozenset[ToolKey]) -> frozenset[ToolKey]:
        """Tools blocked now that the current index still holds."""
        return blocked - (self.excluded or frozenset())

    def schedule(self, rebuild: Callable[[], Awaitable[None]]) -> None:
        """Run ``rebuild`` in the background; a request during one queues one more."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.create_task(
            self._until_current(rebuild), name=f"cartograph:index:{self.name}"
        )

    async def _until_current(self, rebuild: Callable[[], Awaitable[None]]) -> None:
        while True:
            self._again = False
            try:
                await rebuild()
            except Exception:
                logger.exception("catalog %s: rebuilding the index failed", self.name)
            if not self._again:
                return

    async def aclose(self) -> None:
        """Cancel a background rebuild in flight."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


__all__ = ["ServingIndex", "ToolKey"]
