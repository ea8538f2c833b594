"""The ``cartograph`` command: one Typer app, one module per command group.

Each command module registers its commands on :data:`cartograph.cli.app.app`
when imported; :data:`COMMAND_MODULES` lists them. Library errors become exit
codes in :class:`cartograph.cli.app.CartographGroup`, inside the app, and only there.
"""

from __future__ import annotations

import importlib
from typing import Final

import typer

from cartograph.cli.app import app

# Command modules, each registering its commands on import (keep sorted).
COMMAND_MODULES: Final[tuple[str, ...]] = (
    "auth",
    "cards",
    "connect",
    "demo",
    "federation",
    "learning",
    "retrieval",
    "rift",
    "run",
    "serve",
    "stubs",
)


def build_app() -> typer.Typer:
    for name in COMMAND_MODULES:
        importlib.import_module(f"cartograph.cli.{name}")
    return app


def main() -> None:
    """Run the CLI; the app itself turns errors into a message and an exit code."""
    build_app()()


if __name__ == "__main__":
    main()
