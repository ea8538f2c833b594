"""Bundle the demo federation's recipe into the wheel.

Everything else is declared in pyproject.toml. The recipe lives in ``demo/``
(where ``scripts/setup`` installs the servers beside it in a checkout); a
wheel has no checkout, so the build copies the recipe into
``cartograph/demo/recipe`` for ``cartograph demo --setup`` to install from.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

RECIPE_FILES = ("cartograph.toml", "package.json", "package-lock.json")
RECIPE_DIRS = ("python", "files", "bin")


class BuildWithDemoRecipe(build_py):
    """``build_py`` that also copies the demo recipe into the built package."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install reads the checkout's demo/ directly
        source = Path(__file__).resolve().parent / "demo"
        target = Path(self.build_lib) / "cartograph" / "demo" / "recipe"
        target.mkdir(parents=True, exist_ok=True)
        for name in RECIPE_FILES:
            shutil.copyfile(source / name, target / name)
        for name in RECIPE_DIRS:
            shutil.copytree(source / name, target / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithDemoRecipe})
