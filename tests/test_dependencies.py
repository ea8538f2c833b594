"""``pyproject.toml`` declares exactly the distributions the package imports.

An import of an undeclared distribution works only while something else
happens to install it (``httpx2`` did, through ``mcp``); a declared one that
nothing imports is weight every install carries. Imports are read with
:mod:`ast`, lazy ones included.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]


def imported_top_levels(package: Path) -> set[str]:
    """Top-level module names imported anywhere under ``package`` (absolute imports only)."""
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def declared() -> set[str]:
    """Distribution names in ``[project] dependencies`` and the runtime extras, normalised.

    An extra (``rift`` = scipy) is imported lazily behind an actionable error;
    ``dev`` holds test tools the package never imports.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {})
    specs = [*project["dependencies"], *(s for k, v in extras.items() if k != "dev" for s in v)]
    return {_normal(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in specs}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_distribution_is_declared_and_every_declared_one_imported() -> None:
    third_party = (
        imported_top_levels(ROOT / "src" / "cartograph")
        - set(sys.stdlib_module_names)
        - {"cartograph", "__future__"}
    )
    owners = importlib.metadata.packages_distributions()
    imported = {_normal(dist) for module in third_party for dist in owners.get(module, [module])}
    assert imported == declared()
