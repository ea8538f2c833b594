"""The audit record of one proxied request while it is still being understood.

A request learns its target (server, tool, repaired arguments) only part-way
through, and its audit record must say what was known when it ended, however
it ended; so handlers fill one of these in as they go and write it once.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

from cartograph.calls.arguments import MetaCall
from cartograph.index.discover import DiscoverResult


class PendingRecord:
    """What the audit record will say, filled in as the call is understood."""

    def __init__(self, proxy_tool: str, arguments: Any, trace: str | None = None) -> None:
        self.proxy_tool = proxy_tool
        self.arguments = arguments
        self.trace = trace
        self.server: str | None = None
        self.tool: str | None = None
        self.repairs: tuple[str, ...] = ()
        self.found: DiscoverResult | None = None

    def target(self, meta: MetaCall) -> None:
        self.server, self.tool, self.repairs = meta.server, meta.tool, meta.repairs
        self.arguments = meta.arguments


def with_repairs(result: CallToolResult, meta: MetaCall) -> CallToolResult:
    """Say what was repaired without touching the upstream's own content."""
    if not meta.repairs:
        return result
    note = {"cartograph/repaired": list(meta.repairs)}
    text = TextContent(text=f"[cartograph repaired this call: {'; '.join(meta.repairs)}]")
    return result.model_copy(
        update={"meta": {**(result.meta or {}), **note}, "content": [*result.content, text]}
    )
