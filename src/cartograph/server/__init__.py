"""The MCP surface: ``discover``, ``status`` and ``call`` over stdio and HTTP.

The contract: a :class:`CatalogRuntime` is one catalog live (verified cards,
drift, index, gateway); :func:`build_proxy_server` puts the three tools in
front of it. The HTTP mounts live in :mod:`cartograph.server.http`.

The names are resolved on first use (PEP 562): the CLI imports the light
:mod:`cartograph.server.clients` at start-up, and that must not pull in the
MCP SDK (issue 12).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cartograph.server.proxy import build_proxy_server
    from cartograph.server.runtime import CatalogRuntime

_HOMES = {"CatalogRuntime": "runtime", "build_proxy_server": "proxy"}

__all__ = ["CatalogRuntime", "build_proxy_server"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
