"""One real PostgreSQL cluster per test session; one fresh database per test."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from cartograph.config.model import StorageConfig
from tests.helpers.postgres import PASSWORD, PASSWORD_ENV, Postgres, pg_bin, postgres_server

_NAMES = itertools.count(1)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    if pg_bin() is None and os.environ.get("CI") != "true":
        pytest.skip("PostgreSQL is not installed here (scripts/setup.d/60-fleet.sh installs it)")
    with postgres_server() as server:
        yield server


@pytest.fixture
def database_url(postgres: Postgres, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new, empty database on the session's cluster, its password in the environment."""
    name = f"test_{os.getpid()}_{next(_NAMES)}"
    conn = postgres.connect()
    try:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[attr-defined]
    finally:
        conn.close()  # type: ignore[attr-defined]
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    return postgres.url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def storage(database_url: str) -> StorageConfig:
    return StorageConfig(url=database_url, timeout=5.0)
