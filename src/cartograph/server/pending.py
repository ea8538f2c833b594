"""The audit record of one resources/prompts request while it is still being understood.

A request learns its target (server, resource or prompt) only part-way
through, and its audit record must say what was known when it ended, however
it ended; so the content handlers fill one of these in as they go and write it
once, with the one record builder of tool calls
(:func:`~cartograph.calls.pipeline.record_of`); a tool call carries the same facts in
its :class:`~cartograph.calls.request.Call`.
"""

from __future__ import annotations

import time
from typing import Any


class PendingRecord:
    """What the audit record will say, filled in as the request is understood."""

    def __init__(self, proxy_tool: str, arguments: Any, trace: str | None = None) -> None:
        self.proxy_tool = proxy_tool
        self.arguments = arguments
        self.trace = trace
        self.started = time.perf_counter()
        self.server: str | None = None
        self.tool: str | None = None
        self.repairs: tuple[str, ...] = ()
        self.secrets: dict[str, tuple[str, ...]] = {}
        """The classes of secret the scan saw, by direction; never a value."""
