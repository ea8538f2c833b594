"""Live sessions to upstream MCP servers (stdio, streamable HTTP, SSE).

:class:`UpstreamSession` is one pooled-ready client session;
:func:`connect_federation` connects to a whole config concurrently;
:func:`load_catalog_for` is how every command reads the federation (a
``catalog.json`` snapshot when one is given, live servers otherwise).

The names are resolved on first use (PEP 562): importing a light submodule
(:mod:`cartograph.upstream.names`) must not pull in the MCP SDK for commands
that never talk to an upstream (issue 12).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cartograph.upstream.federation import (
        FederationResult,
        ServerReport,
        connect_federation,
        load_catalog_for,
        load_snapshot,
    )
    from cartograph.upstream.session import UpstreamSession

_HOMES = {
    "FederationResult": "federation",
    "ServerReport": "federation",
    "connect_federation": "federation",
    "load_catalog_for": "federation",
    "load_snapshot": "federation",
    "UpstreamSession": "session",
}

__all__ = [
    "FederationResult",
    "ServerReport",
    "UpstreamSession",
    "connect_federation",
    "load_catalog_for",
    "load_snapshot",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
