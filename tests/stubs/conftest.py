from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def bench_dir() -> Path:
    """Shared benchmark data: ``$CARTOGRAPH_BENCH_DIR`` or ``<repo>/../shared/bench``."""
    return Path(os.environ.get("CARTOGRAPH_BENCH_DIR", REPO.parent / "shared" / "bench"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def bench_catalog_path() -> Path:
    path = bench_dir() / "livemcpbench" / "catalog.json"
    if not path.is_file():
        pytest.skip(f"LiveMCPBench catalog not found at {path}; set CARTOGRAPH_BENCH_DIR")
    return path
