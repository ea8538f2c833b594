"""The promises manifest: every promise id in PROMISES.md has a test naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import PROMISED

MANIFEST = Path(__file__).parent / "promises.txt"


def _promise_ids() -> list[str]:
    return re.findall(r"^(P-[A-Z]+-\d+)\b", MANIFEST.read_text(encoding="utf-8"), re.M)


def test_manifest_lists_promises() -> None:
    assert len(_promise_ids()) >= 30


@pytest.mark.parametrize("promise_id", _promise_ids())
def test_every_promise_has_a_test(promise_id: str) -> None:
    assert promise_id in PROMISED, f"no test is marked @pytest.mark.promise({promise_id!r})"
