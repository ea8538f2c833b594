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

from cartograph.cli.app import ConfigOption, JsonOption, app
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
) -> None:
    """Run the main job on the demo federation: connect, attest, verify, and act as an agent."""
    from cartograph.cli.federation import connect_live, show_reports
    from cartograph.demo.runner import run_demo
    from cartograph.demo.steps import FederationView

    path = Path(os.path.abspath(config or DEMO_CONFIG))
    view = FederationView(connect_live, partial(show_reports, json_out=False))
    results = anyio.run(
        lambda: run_demo(path, json_out=json_out, http=not no_http, state_dir=state_dir, view=view)
    )
    if json_out:
        print_json(results)
    if not results["ok"]:
        raise typer.Exit(1)
