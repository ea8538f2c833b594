"""The demo federation's recipe, and installing it outside a source checkout.

A wheel carries the recipe (config, npm lockfile, pinned Python server
requirements, the folder the filesystem server serves); the servers
themselves come from the registries once, when the user runs
``cartograph demo --setup``. After that the demo runs offline, exactly as it
does from a checkout after ``scripts/setup``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Final

from cartograph import error_codes as codes
from cartograph.errors import DemoError

CONFIG_NAME: Final = "cartograph.toml"
RECIPE_FILES: Final = ("cartograph.toml", "package.json", "package-lock.json")
RECIPE_DIRS: Final = ("python", "files", "bin")
SETUP_HINT: Final = "run `cartograph demo --setup` once (it needs node/npm and the registries)"

Progress = Callable[[str], None]


def recipe_dir() -> Path:
    """The recipe: bundled in the wheel, or the checkout's ``demo/`` folder.

    A wheel build copies ``demo/`` into ``cartograph/demo/recipe`` (see
    setup.py); an editable install has no copy, so it reads the checkout.
    """
    bundled = Path(str(resources.files("cartograph.demo") / "recipe"))
    if (bundled / CONFIG_NAME).is_file():
        return bundled
    checkout = Path(__file__).resolve().parents[3] / "demo"
    if (checkout / CONFIG_NAME).is_file():
        return checkout
    raise DemoError(
        "this Cartograph install carries no demo federation recipe; reinstall from the "
        "published wheel or run from a source checkout",
        code=codes.DEMO_RECIPE_MISSING,
    )


def default_home() -> Path:
    """Where ``--setup`` installs the demo when no folder is given (XDG data home)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "cartograph" / "demo"


def installed_config(home: Path) -> Path:
    """The config of a demo installed by :func:`install`, or an error saying how to get one."""
    config = home / CONFIG_NAME
    if not config.is_file():
        raise DemoError(
            f"no demo federation installed at {home}: {SETUP_HINT}",
            code=codes.DEMO_NOT_INSTALLED,
        )
    return config


def install(home: Path, progress: Progress) -> Path:
    """Copy the recipe to ``home`` and install every server it names; return its config.

    Re-running refreshes the recipe and reinstalls; the operator key and the
    cards under ``.state`` are kept.
    """
    recipe = recipe_dir()
    home.mkdir(parents=True, exist_ok=True)
    if recipe.resolve() != home.resolve():
        _copy_recipe(recipe, home)
    _install_npm(home, progress)
    for requirements in sorted((home / "python").glob("*.txt")):
        _install_python_server(home, requirements, progress)
    return home / CONFIG_NAME


def _copy_recipe(recipe: Path, home: Path) -> None:
    for name in RECIPE_FILES:
        shutil.copyfile(recipe / name, home / name)
    for name in RECIPE_DIRS:
        shutil.copytree(recipe / name, home / name, dirs_exist_ok=True)


def _install_npm(home: Path, progress: Progress) -> None:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise DemoError(
            "the demo's npm servers need Node.js 20+ with npm on PATH; install Node.js, then "
            "re-run `cartograph demo --setup`",
            code=codes.DEMO_NEEDS_NODE,
        )
    progress("installing the demo's npm servers (npm ci)")
    # --ignore-scripts: no post-install browser downloads; every demo server runs without them.
    command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    _run(command, home, what="npm ci")


def _install_python_server(home: Path, requirements: Path, progress: Progress) -> None:
    name = requirements.stem
    venv = home / ".runtime" / name
    progress(f"installing the demo's Python server {name!r}")
    if venv.exists():
        shutil.rmtree(venv)
    _run([sys.executable, "-m", "venv", str(venv)], home, what=f"venv for {name}")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(requirements)]
    _run(pip, home, what=f"pip install for {name}")


def _run(command: list[str], cwd: Path, *, what: str) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join(_last_lines(done.stderr or done.stdout, 12))
        raise DemoError(
            f"demo setup failed at {what} (exit {done.returncode}) in {cwd}:\n{tail}",
            code=codes.DEMO_SETUP_FAILED,
        )


def _last_lines(text: str, count: int) -> Iterator[str]:
    yield from text.strip().splitlines()[-count:]
