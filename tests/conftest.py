"""Shared fixtures and the promise marker.

Every promise in PROMISES.md must be proved by at least one test tagged
``@pytest.mark.promise("P-...")``; ``test_promises.py`` fails when one is not.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROMISED: set[str] = set()
COLLECTED_FILES: set[Path] = set()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        COLLECTED_FILES.add(item.path.resolve())
        for mark in item.iter_markers("promise"):
            PROMISED.update(str(arg) for arg in mark.args)


def bench_dir() -> Path:
    """Shared benchmark data: ``$CARTOGRAPH_BENCH_DIR`` or ``<repo>/../shared/bench``."""
    return Path(os.environ.get("CARTOGRAPH_BENCH_DIR", REPO.parent / "shared" / "bench"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def livemcpbench_catalog_path() -> Path:
    path = bench_dir() / "livemcpbench" / "catalog.json"
    if not path.is_file():
        pytest.skip(f"LiveMCPBench catalog not found at {path}; set CARTOGRAPH_BENCH_DIR")
    return path
