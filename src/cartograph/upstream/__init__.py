"""Live sessions to upstream MCP servers (stdio, streamable HTTP, SSE).

:class:`UpstreamSession` is one pooled-ready client session;
:func:`connect_federation` connects to a whole config concurrently;
:func:`load_catalog_for` is how every command reads the federation (a
``catalog.json`` snapshot when one is given, live servers otherwise).
"""

from cartograph.upstream.federation import (
    FederationResult,
    ServerReport,
    connect_federation,
    load_catalog_for,
    load_snapshot,
)
from cartograph.upstream.session import UpstreamSession

__all__ = [
    "FederationResult",
    "ServerReport",
    "UpstreamSession",
    "connect_federation",
    "load_catalog_for",
    "load_snapshot",
]
