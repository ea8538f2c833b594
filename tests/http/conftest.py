"""Fixtures for the HTTP surface: anyio on asyncio, servers on free loopback ports."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
