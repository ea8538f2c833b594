"""``cartograph auth login | status | logout``: OAuth for HTTP upstreams (``auth = "oauth"``).

``login`` is the one step that needs a person: it prints the authorization URL
(and opens a browser unless ``--no-browser``), receives the redirect on a
loopback port and stores the tokens (0600) in the state directory. ``serve``
then refreshes them on its own. No command ever prints a token.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import anyio
import typer

from cartograph import error_codes as codes
from cartograph.cli.app import ConfigOption, JsonOption, app, resolve_config_path
from cartograph.cli.output import print_json, print_table, stderr
from cartograph.errors import ConfigError

if TYPE_CHECKING:
    from cartograph.config.model import Config, ServerConfig

auth_app = typer.Typer(
    help="OAuth for HTTP upstreams: login once, then serve refreshes.", no_args_is_help=True
)
app.add_typer(auth_app, name="auth")

NoBrowserOption = Annotated[
    bool,
    typer.Option(
        "--no-browser",
        help="Only print the URL (headless: open it anywhere that reaches this machine's "
        "loopback port, e.g. through `ssh -L PORT:127.0.0.1:PORT`).",
    ),
]


def _config(path: Path | None) -> Config:
    from cartograph.config.loader import load_config

    return load_config(resolve_config_path(path))


def oauth_server(config: Config, name: str) -> ServerConfig:
    """The configured server ``name``; it must say ``auth = "oauth"``."""
    server = config.server(name)
    if server is None:
        known = ", ".join(s.name for s in config.servers if s.auth == "oauth") or "(none)"
        raise ConfigError(
            f"no server {name!r} in {config.source}; servers with auth = 'oauth': {known}",
            code=codes.UNKNOWN_SERVER,
            server=name,
        )
    if server.auth != "oauth":
        raise ConfigError(
            f'server {name!r} is not configured for OAuth; add auth = "oauth" to '
            f"[servers.{name}] in {config.source}",
            code=codes.OAUTH_NOT_CONFIGURED,
            server=name,
        )
    return server


@auth_app.command("login")
def login(
    server: Annotated[str, typer.Argument(help="The server, as named in the config.")],
    config: ConfigOption = None,
    no_browser: NoBrowserOption = False,
) -> None:
    """Authorize Cartograph at SERVER once (browser flow); tokens go to the state directory."""
    from cartograph.upstream.oauth import redirect_uri
    from cartograph.upstream.oauth_login import login as run_login

    cfg = oauth_server(_config(config), server)

    def announce(url: str) -> None:
        stderr.print(f"Open this URL to authorize Cartograph at {server}:", highlight=False)
        # The URL alone on its line, unwrapped, so it can be copied (or read by a script).
        print(url, flush=True)
        stderr.print(f"Waiting for the redirect to {redirect_uri(cfg)} ...", highlight=False)

    anyio.run(partial(run_login, cfg, announce=announce, open_browser=not no_browser))
    stderr.print(f"[green]logged in[/] to {server}; `cartograph serve` refreshes the token")


@auth_app.command("status")
def status(config: ConfigOption = None, json_out: JsonOption = False) -> None:
    """Which OAuth servers have a stored token, when it expires and which registration got it
    (pre-registered, client-id-metadata-document or dynamic); never the token."""
    from cartograph.upstream.oauth import token_status

    cfg = _config(config)
    rows = [token_status(s) for s in cfg.servers if s.auth == "oauth"]
    if json_out:
        print_json(rows)
        return
    print_table(
        "OAuth upstreams",
        ["server", "logged in", "refreshable", "expires in (s)", "registration", "store"],
        [
            [
                r["server"],
                r["logged_in"],
                r["refreshable"],
                r["expires_in"],
                r["registration"] or "-",
                r["store"],
            ]
            for r in rows
        ],
    )


@auth_app.command("client-metadata")
def client_metadata(
    server: Annotated[str, typer.Argument(help="The server, as named in the config.")],
    config: ConfigOption = None,
) -> None:
    """Print SERVER's client ID metadata document, to serve at its oauth.client_metadata_url."""
    from cartograph.upstream.oauth import metadata_document

    print_json(metadata_document(oauth_server(_config(config), server)))


@auth_app.command("logout")
def logout(
    server: Annotated[str, typer.Argument(help="The server, as named in the config.")],
    config: ConfigOption = None,
) -> None:
    """Delete SERVER's stored tokens and registration (the next login starts afresh)."""
    from cartograph.upstream.oauth import store_path

    path = store_path(oauth_server(_config(config), server))
    path.unlink(missing_ok=True)
    stderr.print(f"logged out of {server} ({path} removed)", highlight=False)
