"""Following an upstream's ``*/list`` cursors, bounded.

A paginator that never ends, or one that hands back a cursor it already gave,
must not hang a listing: both are protocol errors after at most
:data:`MAX_LIST_PAGES` pages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

from cartograph import error_codes as codes
from cartograph.errors import UpstreamProtocolError

MAX_LIST_PAGES: Final = 100
"""A paginator that never ends must not hang ``tools/list``."""

_Item = TypeVar("_Item")


class _Page(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


async def paged(
    server: str,
    method: str,
    fetch: Callable[[str | None], Awaitable[_Page]],
    items: Callable[[Any], Sequence[_Item]],
    *,
    optional: bool = False,
) -> list[_Item]:
    """Follow ``method``'s cursors; ``optional``: a server without the method lists nothing.

    ``items`` runs on each page as it arrives, before the next is fetched.

    Raises:
        UpstreamProtocolError: a repeated cursor, or more than :data:`MAX_LIST_PAGES` pages.
        MCPError: the server's own error, as the SDK raised it (the caller translates).
    """
    found: list[_Item] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_LIST_PAGES):
        try:
            page = await fetch(cursor)
        except MCPError as exc:
            if optional and exc.error.code == types.METHOD_NOT_FOUND:
                return found
            raise
        found.extend(items(page))
        cursor = page.next_cursor
        if cursor is None:
            return found
        if cursor in seen:
            raise protocol_error(server, f"{method} repeated cursor {cursor!r}")
        seen.add(cursor)
    raise protocol_error(server, f"{method} went past {MAX_LIST_PAGES} pages")


def protocol_error(server: str, what: str) -> UpstreamProtocolError:
    """The upstream broke the protocol: ``what`` says how."""
    return UpstreamProtocolError(
        f"upstream {server!r}: {what}", code=codes.UPSTREAM_PROTOCOL, server=server
    )


__all__ = ["MAX_LIST_PAGES", "paged", "protocol_error"]
