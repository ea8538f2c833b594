"""Shared fixtures and the promise marker.

Every promise in PROMISES.md must be proved by at least one test tagged
``@pytest.mark.promise("P-...")``; ``test_promises.py`` fails when one is not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

PROMISED: set[str] = set()
COLLECTED_FILES: set[Path] = set()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        COLLECTED_FILES.add(item.path.resolve())
        for mark in item.iter_markers("promise"):
            PROMISED.update(str(arg) for arg in mark.args)
