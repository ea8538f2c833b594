"""The ``cartograph`` command (Typer): the only place errors become exit codes.

The contract: :data:`app` is the Typer application; each command module
registers on it when imported (:mod:`cartograph.cli.main` imports them all).
"""

from cartograph.cli.app import app

__all__ = ["app"]
