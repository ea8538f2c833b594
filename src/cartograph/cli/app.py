"""The root Typer app and the options every command shares."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer

if TYPE_CHECKING:
    from cartograph.config.model import Config

DEFAULT_CONFIG_NAME: Final = "cartograph.toml"
CONFIG_ENV: Final = "CARTOGRAPH_CONFIG"

app = typer.Typer(
    name="cartograph",
    help="Federated MCP proxy: signed capability cards, tool retrieval, Rift, gateway.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help=f"Config file (default: ${CONFIG_ENV} or ./{DEFAULT_CONFIG_NAME}).",
    ),
]
CatalogOption = Annotated[
    Path | None,
    typer.Option("--catalog", help="Use a catalog.json snapshot instead of live servers."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def resolve_config_path(explicit: Path | None) -> Path:
    """The config path a command should load: flag, then env, then ./cartograph.toml."""
    if explicit is not None:
        return explicit
    from_env = os.environ.get(CONFIG_ENV)
    return Path(from_env) if from_env else Path(DEFAULT_CONFIG_NAME)


def load_config_or_defaults(explicit: Path | None) -> Config:
    """The config file, or defaults when none was named and the default one is absent.

    For commands a ``--catalog`` snapshot alone can drive (``rift``, ``stubs``): a
    config file that was named (flag or env) and is missing still fails to load.
    """
    from cartograph.config.loader import load_config
    from cartograph.config.model import Config

    resolved = resolve_config_path(explicit)
    if explicit is None and not resolved.exists():
        return Config()
    return load_config(resolved)


@app.callback()
def _root() -> None:
    """Federated MCP proxy: signed capability cards, tool retrieval, Rift, gateway."""


@app.command()
def version() -> None:
    """Print Cartograph's version."""
    from cartograph import __version__

    typer.echo(__version__)
