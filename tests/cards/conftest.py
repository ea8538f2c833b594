"""Fixtures for card tests: small catalogs, keys, and the benchmark catalog path."""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.catalog.model import Catalog
from tests.cards.support import small_catalog

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def catalog() -> Catalog:
    return small_catalog()
