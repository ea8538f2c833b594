"""The value that carries one proxy tool call, from its first check to its audit record.

A :class:`CallRequest` is what arrived: who asked, in which catalog, for
which proxy tool, with which arguments, and how to reach the caller back. It
never changes. A :class:`Call` holds it and what the steps of
:mod:`cartograph.calls.pipeline` learn on the way: the proxy tool the name
resolved to, the upstream target read from the meta-call, the card entry
that was checked, the result. The one audit record is written from it, so it
says what was known when the call ended, however it ended.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.dispatcher import ProgressFnT
from mcp.types import CallToolResult

from cartograph.calls.arguments import MetaCall
from cartograph.cards.model import ToolCard
from cartograph.index.discover import DiscoverResult

Answer = Callable[["Call"], Awaitable[CallToolResult]]
"""A proxy tool the mount answers itself (``discover``, ``status``): no upstream behind it."""


@dataclass(frozen=True)
class CallRequest:
    """One call of a proxy tool, as it arrived (see module docstring).

    ``name`` is the proxy tool as the agent spelled it (prefix and all);
    ``arguments`` are its arguments as sent (for ``call``: the meta-call,
    ``{"server", "tool", "arguments"}``, perhaps malformed). ``client`` is
    the downstream session (it partitions stateful upstream sessions),
    ``progress`` forwards the upstream's progress notifications, ``trace``
    is the ``traceparent`` the audit record keeps.
    """

    catalog: str
    principal: str | None
    name: str
    arguments: Mapping[str, Any] | None
    client: str | None = None
    progress: ProgressFnT | None = None
    trace: str | None = None


@dataclass
class Call:
    """A :class:`CallRequest` on its way through the steps, and what they found out."""

    request: CallRequest
    started: float = field(default_factory=time.perf_counter)
    proxy_tool: str = ""
    """The proxy tool ``request.name`` resolved to (the name as sent until then)."""
    answer: Answer | None = None
    """Set by ``resolve`` for a proxy tool the mount answers itself; None for a tool call."""
    target: MetaCall | None = None
    """Set by ``resolve`` for a tool call: server, tool, arguments and the repairs made."""
    tool_card: ToolCard | None = None
    """Set by ``card_intact``: the card's entry for this tool, verified intact."""
    upstream: MetaCall | None = None
    """Set by ``transform`` for a reshaped tool: the call in the upstream's own shape."""
    result: CallToolResult | None = None
    found: DiscoverResult | None = None
    """What ``discover`` found (metrics and learning read it)."""
    secrets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The classes of secret the scan saw, by direction (``arguments``, ``result``)."""

    def __post_init__(self) -> None:
        self.proxy_tool = self.proxy_tool or self.request.name

    @property
    def resolved(self) -> MetaCall:
        """The tool call's target; only the steps after ``resolve`` of a tool call ask."""
        if self.target is None:
            raise RuntimeError("this call has no upstream target (resolve did not run)")
        return self.target

    @property
    def sent(self) -> MetaCall:
        """What ``forward`` sends: the mapped call of a reshaped tool, else the target."""
        return self.upstream if self.upstream is not None else self.resolved

    @property
    def server(self) -> str | None:
        return self.target.server if self.target is not None else None

    @property
    def tool(self) -> str | None:
        return self.target.tool if self.target is not None else None

    @property
    def arguments(self) -> Any:
        """The arguments the audit record shapes: the repaired ones once they are known."""
        return self.target.arguments if self.target is not None else self.request.arguments

    @property
    def repairs(self) -> tuple[str, ...]:
        return self.target.repairs if self.target is not None else ()
