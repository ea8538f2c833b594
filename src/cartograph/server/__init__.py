"""The MCP surface: ``discover``, ``status`` and ``call`` over stdio and HTTP.

The contract: a :class:`CatalogRuntime` is one catalog live (verified cards,
drift, index, gateway; the room :mod:`cartograph.server.runtime`);
:func:`build_proxy_server` puts the proxy tools in front of it. The transports
live in :mod:`cartograph.server.stdio` and :mod:`cartograph.server.http`.
"""

from cartograph.server.proxy import build_proxy_server
from cartograph.server.runtime.catalog import CatalogRuntime

__all__ = ["CatalogRuntime", "build_proxy_server"]
