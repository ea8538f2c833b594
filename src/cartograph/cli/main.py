"""The ``cartograph`` command: one Typer app, one module per command group.

Each command module registers its commands on :data:`cartograph.cli.app.app`
when imported; :data:`COMMAND_MODULES` lists them. Library errors become exit
codes here and only here.
"""

from __future__ import annotations

import importlib
import sys
from typing import Final

import typer

from cartograph.cli.app import app
from cartograph.cli.output import print_error
from cartograph.errors import CartographError

EXIT_CARTOGRAPH_ERROR: Final = 2

# Command modules, each registering its commands on import (keep sorted).
COMMAND_MODULES: Final[tuple[str, ...]] = (
    "auth",
    "cards",
    "demo",
    "federation",
    "http_client",
    "learning",
    "retrieval",
    "rift",
    "serve",
    "stubs",
)


def build_app() -> typer.Typer:
    for name in COMMAND_MODULES:
        importlib.import_module(f"cartograph.cli.{name}")
    return app


def main() -> None:
    """Run the CLI, turning Cartograph errors into a message and exit code 2."""
    cli = build_app()
    try:
        cli()
    except CartographError as exc:
        print_error(exc)
        sys.exit(EXIT_CARTOGRAPH_ERROR)


if __name__ == "__main__":
    main()
