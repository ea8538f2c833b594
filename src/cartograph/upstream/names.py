"""Name hygiene for a federation's catalog (P-NAME-1).

Server names across the catalog, and tool names within each server, must stay
distinct after :func:`cartograph.names.normalise_name` and must not read like
one of Cartograph's own proxy tools. Collisions are rejected when a
federation connects, with a message that names both sources.
"""

from __future__ import annotations

from cartograph.catalog.model import Catalog, ServerDef
from cartograph.names import NamedThing, check_names


def check_tool_names(server: ServerDef) -> None:
    """A server's tools must be distinct from each other and from the proxy tools."""
    check_names(
        NamedThing(tool.name, f"tool {tool.name!r} of server {server.name!r}")
        for tool in server.tools
    )


def check_catalog_names(catalog: Catalog) -> None:
    """Server names across the catalog, then tool names within each server."""
    check_names(NamedThing(server.name, f"server {server.name!r}") for server in catalog.servers)
    for server in catalog.servers:
        check_tool_names(server)


__all__ = ["check_catalog_names", "check_tool_names"]
