"""Full-output snapshots: a transformation's whole result compared byte for byte.

A snapshot lives in ``tests/snapshots/``. When a change to the output is
intended, re-record with ``CARTOGRAPH_UPDATE_SNAPSHOTS=1 pytest ...`` and
review the diff of the snapshot file in the commit like any other change.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE_VARIABLE = "CARTOGRAPH_UPDATE_SNAPSHOTS"


def assert_snapshot(actual: str, name: str) -> None:
    """Fail with a unified diff unless ``actual`` equals the recorded ``name``."""
    path = SNAPSHOTS / name
    if os.environ.get(UPDATE_VARIABLE) == "1":
        path.write_text(actual, encoding="utf-8")
    if not path.is_file():
        raise AssertionError(f"no snapshot {name}; record it with {UPDATE_VARIABLE}=1")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            f"snapshots/{name}",
            "actual",
        )
        raise AssertionError(
            f"output differs from snapshots/{name} (re-record with {UPDATE_VARIABLE}=1 "
            "if the change is intended):\n" + "".join(diff)
        )
