"""Shared fixtures; registers the promise check.

Every promise in PROMISES.md (mirrored in ``tests/promises.txt``) must be proved
by a test tagged ``@pytest.mark.promise("P-...")`` that runs and passes;
``tests/promise_check.py`` fails a full run when one does not (see its docstring).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester", "tests.promise_check"]

REPO = Path(__file__).resolve().parents[1]


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
