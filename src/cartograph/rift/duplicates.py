"""The same server connected twice: identical tool names and input schemas.

A federation that lists one server over two transports (``everything`` over
stdio and again over HTTP) doubles every tool, and every pair is a Rift
cluster with margin 0. Rewriting cards cannot fix that, and neither choice
is wrong for a task — the fix is to connect the server once. Rift reports
such pairs as one finding with the config change, and leaves their tool
pairs out of the risk rating (``--paper`` keeps them in).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from cartograph.rift.model import DuplicateServers


class _Tool(Protocol):
    @property
    def server(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def schema(self) -> str: ...


def duplicate_servers(tools: Sequence[_Tool]) -> list[DuplicateServers]:
    """Every pair of servers whose tool sets (name + input schema) are identical."""
    signature: dict[str, set[tuple[str, str]]] = {}
    for t in tools:
        signature.setdefault(t.server, set()).add((t.tool, t.schema))
    by_shape: dict[frozenset[tuple[str, str]], list[str]] = {}
    for server, shape in signature.items():
        if shape:
            by_shape.setdefault(frozenset(shape), []).append(server)
    found: list[DuplicateServers] = []
    for tools_of, servers in by_shape.items():
        keep, *extra = sorted(servers)
        found.extend(_finding(keep, other, len(tools_of)) for other in extra)
    return sorted(found, key=lambda d: d.servers)


def _finding(keep: str, drop: str, tools: int) -> DuplicateServers:
    return DuplicateServers(
        servers=(keep, drop),
        tools=tools,
        text=(
            f"{keep} and {drop} list the same {tools} tools with identical input schemas: "
            f"the same server connected twice. Connect it once — disable {drop} (or {keep}) "
            "in the config, then run `cartograph bootstrap`."
        ),
        fix=f'[servers."{drop}"]\nenabled = false',
    )


__all__ = ["duplicate_servers"]
