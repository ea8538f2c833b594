"""No module under src/cartograph grows past the size budget, as the layers are held by a test.

The budget is 600 lines (STYLE.md, item 15; fastmcp holds its files to 1000 in config).
A module that outgrows it is split along its seams. The few that may stay over for a
while are listed in :data:`ALLOWED`, each with its reason, and the list only shrinks:
an entry whose module is back under the budget (or gone) fails until it is removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

PACKAGE: Final = Path(__file__).resolve().parents[1] / "src" / "cartograph"
BUDGET: Final = 600
"""Lines per module, counted as ``wc -l`` counts them."""

ALLOWED: Final[Mapping[str, str]] = {}
"""Module (path under src/cartograph) → why it may stay over :data:`BUDGET` for now."""


def line_counts(package: Path) -> dict[str, int]:
    """Every module's line count, keyed by its path under ``package``."""
    return {
        path.relative_to(package).as_posix(): len(path.read_bytes().splitlines())
        for path in sorted(package.rglob("*.py"))
    }


def over_budget(counts: Mapping[str, int], allowed: Mapping[str, str]) -> list[str]:
    """Modules over the budget that no allowance covers."""
    return [
        f"{name}: {lines} lines (budget {BUDGET}): split it along its seams"
        for name, lines in sorted(counts.items())
        if lines > BUDGET and name not in allowed
    ]


def needless_allowances(counts: Mapping[str, int], allowed: Mapping[str, str]) -> list[str]:
    """Allowances whose module is gone or back within the budget: remove them."""
    return [name for name in sorted(allowed) if counts.get(name, 0) <= BUDGET]


# -- the code base ------------------------------------------------------------------------


def test_no_module_is_over_the_size_budget() -> None:
    assert over_budget(line_counts(PACKAGE), ALLOWED) == []


def test_every_allowance_is_still_needed_and_says_why() -> None:
    assert needless_allowances(line_counts(PACKAGE), ALLOWED) == []
    assert [name for name, reason in ALLOWED.items() if not reason.strip()] == []


# -- the checks themselves can fail ---------------------------------------------------------


def _package(tmp_path: Path, files: Mapping[str, int]) -> Path:
    package = tmp_path / "cartograph"
    for name, lines in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * lines, encoding="utf-8")
    return package


def test_a_module_one_line_over_the_budget_is_found(tmp_path: Path) -> None:
    package = _package(tmp_path, {"server/big.py": BUDGET + 1, "server/fits.py": BUDGET})
    assert over_budget(line_counts(package), {}) == [
        f"server/big.py: {BUDGET + 1} lines (budget {BUDGET}): split it along its seams"
    ]


def test_an_allowance_for_a_module_back_under_the_budget_is_found(tmp_path: Path) -> None:
    package = _package(tmp_path, {"server/big.py": BUDGET + 1, "server/split.py": 10})
    allowed = {"server/big.py": "being split", "server/split.py": "was big", "gone.py": "moved"}
    counts = line_counts(package)
    assert over_budget(counts, allowed) == []
    assert needless_allowances(counts, allowed) == ["gone.py", "server/split.py"]
