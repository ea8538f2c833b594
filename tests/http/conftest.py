"""Fixtures for the HTTP surface: servers on free loopback ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.scriptable import HeaderLog, http_upstream
from tests.http.support import serving


@pytest.fixture
def upstream() -> Iterator[tuple[str, HeaderLog]]:
    """A real streamable-HTTP upstream on loopback: its ``/mcp`` URL and the headers it saw."""
    log = HeaderLog()
    with serving(http_upstream(log)) as base:
        yield f"{base}/mcp", log
