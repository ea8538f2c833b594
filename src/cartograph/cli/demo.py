"""``cartograph demo``: run the main job on the demo federation (demo/cartograph.toml).

connect and list → operator key (once) → bootstrap signed cards → verify →
an agent drives ``cartograph serve`` over stdio: ``tools/list``, ``discover``,
``call``, ``status``. Exit 1 when any check fails (the summary names it).
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Annotated, Final

import anyio
import typer

from cartograph.cli.app import EXIT_CHECK_FAILED, ConfigOption, JsonOption, app
from cartograph.cli.output import print_json

DEMO_CONFIG: Final = Path("demo/cartograph.toml")


@app.command()
def demo(
    config: ConfigOption = None,
    json_out: JsonOption = False,
    no_http: Annotated[
        bool, typer.Option("--no-http", help="Do not start the loopback HTTP upstream.")
    ] = False,
    state_dir: Annotated[
        Path | None,
        typer.Option("--state-dir", help="State directory (default: the config's, demo/.state)."),
    ] = None,
    setup: Annotated[
        bool,
        typer.Option(
            "--setup",
            help="Install the demo federation's servers (npm and PyPI, once), then run the demo.",
        ),
    ] = False,
    home: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Where --setup installs the demo outside a checkout "
            "(default: $XDG_DATA_HOME/cartograph/demo).",
        ),
    ] = None,
) -> None:
    """Run the main job on the demo federation: connect, attest, verify, and act as an agent."""
    from cartograph.cli.federation import connect_live, show_reports
    from cartograph.demo.runner import run_demo
    from cartograph.demo.steps import FederationView

    path = Path(os.path.abspath(_demo_config(config, home, setup=setup)))
    view = FederationView(connect_live, partial(show_reports, json_out=False))
    results = anyio.run(
        lambda: run_demo(path, json_out=json_out, http=not no_http, state_dir=state_dir, view=view)
    )
    if json_out:
        print_json(results)
    if not results["ok"]:
        raise typer.Exit(EXIT_CHECK_FAILED)


def _demo_config(config: Path | None, home: Path | None, *, setup: bool) -> Path:
    """The config to run: explicit, freshly installed, the checkout's, or the installed one.

    A checkout keeps ``demo/cartograph.toml`` (set up by ``scripts/setup``);
    an installed wheel has no checkout, so the demo lives in a data folder
    that ``--setup`` fills.
    """
    from cartograph.demo import federation

    if setup:
        from rich.console import Console

        console = Console(stderr=True)
        target = home or federation.default_home()
        with console.status("setting up the demo federation") as status:
            installed = federation.install(target, lambda step: status.update(step))
        console.print(f"demo federation installed in {target}")
        return installed
    if config is not None:
        return config
    if home is None and DEMO_CONFIG.is_file():
        return DEMO_CONFIG
    return federation.installed_config(home or federation.default_home())
