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
from collections.abc import Mapping
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]


def imported_modules(package: Path) -> set[str]:
    """Dotted names imported anywhere under ``package`` (absolute imports only)."""
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from opentelemetry import trace` imports the module opentelemetry.trace
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def owners_of(module: str, owners: Mapping[str, list[str]]) -> list[str]:
    """The distributions that ship ``module``.

    A namespace package (``opentelemetry``) is shared by many distributions; the
    one that ships ``opentelemetry.sdk.trace`` is the one whose files hold
    ``opentelemetry/sdk/trace/`` (or the deepest such folder that any holds).
    """
    top = module.split(".")[0]
    dists = owners.get(top, [top])
    if len(dists) <= 1:
        return dists
    parts = module.split(".")
    for depth in range(len(parts), 1, -1):
        folder = "/".join(parts[:depth])
        shipping = [d for d in dists if _ships(d, folder)]
        if shipping:
            return shipping
    return dists


def _ships(dist: str, folder: str) -> bool:
    files = importlib.metadata.files(dist) or []
    return any(str(f).startswith(folder + "/") or str(f) == folder + ".py" for f in files)


def declared() -> set[str]:
    """Distribution names in ``[project] dependencies`` and the runtime extras, normalised.

    An extra (``rift`` = scipy) is imported lazily behind an actionable error;
    :data:`TOOL_EXTRAS` hold tools the package never imports.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {})
    runtime = (v for k, v in extras.items() if k not in TOOL_EXTRAS)
    specs = [*project["dependencies"], *(s for v in runtime for s in v)]
    names = {_normal(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in specs}
    # An extra may name another of ours (demo = cartograph[code]): that is not a distribution.
    return names - set(BINARY_ONLY) - {_normal(project["name"])}


TOOL_EXTRAS: Final = {
    "dev": "tests, linters and type checking",
    "bench": "the benchmarks' peer (fastmcp), imported only under benchmarks/",
}
"""Extras for working on Cartograph, not for running it: the package imports none of them."""

BINARY_ONLY: Final = {
    "pydantic-monty-runtime": "the `monty` worker binary code mode spawns (cartograph[code])",
}
"""Declared distributions that ship an executable, not a module: nothing imports them."""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_distribution_is_declared_and_every_declared_one_imported() -> None:
    ours = {"cartograph", "__future__"}
    third_party = {
        module
        for module in imported_modules(ROOT / "src" / "cartograph")
        if module.split(".")[0] not in {*sys.stdlib_module_names, *ours}
    }
    owners = importlib.metadata.packages_distributions()
    imported = {_normal(dist) for module in third_party for dist in owners_of(module, owners)}
    assert imported == declared()
