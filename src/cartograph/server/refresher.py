"""Coalesced re-listing: a flood of change notifications costs one run in flight plus one after.

An upstream may send ``list_changed`` many times while a re-list of it is
still running; each notification starting a re-list of its own would pile up
work the first one already covers. :class:`CoalescingRefresher` folds every
trigger that arrives during a run into a single follow-up run, which starts
after the run in flight and so sees every change announced before it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

Refresh = Callable[[], Awaitable[None]]
"""One re-list: takes nothing, returns when the listing has been folded in."""


class CoalescingRefresher:
    """Per key (a server name): at most one refresh in flight and at most one queued after it.

    Used by the drift tracker (``tools/list_changed``) and the resource/prompt
    passthrough (``resources``/``prompts/list_changed``), which re-list the
    same way but keep different state.
    """

    def __init__(self) -> None:
        self._queued: dict[str, bool] = {}
        """Keys with a run in flight, each with whether another run is queued after it."""

    async def trigger(self, key: str, refresh: Refresh) -> None:
        """Run ``refresh`` now, or queue one more run of the refresh already in flight.

        The trigger that starts a run drives it: it returns once no run is
        queued any more, repeating *its own* ``refresh`` (a later trigger's is
        not used: it only asks for one more run). A trigger during a run
        returns at once. An exception from ``refresh`` ends the run, drops a
        queued rerun and propagates to the trigger that started it; the next
        trigger starts afresh.
        """
        if key in self._queued:
            self._queued[key] = True
            return
        self._queued[key] = False
        try:
            while True:
                await refresh()
                if not self._queued[key]:
                    return
                self._queued[key] = False
        finally:
            del self._queued[key]


__all__ = ["CoalescingRefresher", "Refresh"]
