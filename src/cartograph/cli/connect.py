"""The client side: connect, doctor, client-status and bridge (docs/decisions/0001).

``connect`` writes, for each client, the entry that client really accepts
(:data:`cartograph.cli.client_files.DIALECTS`): for a running HTTP server the
entries follow its ``/health`` — a routed server (``mount_mode: "routed"``
and ``routed_path``) gets ONE entry, any other server one per catalog — and
Claude Desktop gets a stdio ``cartograph bridge`` entry instead of a URL; for
a config file, a stdio ``serve`` entry (one per catalog when there are two
or more). Every connection is recorded in a small project file
(:data:`PROJECT_FILE`), one record per client file, so ``doctor`` can check
every connected client offline, and ``client-status`` can notice that the
server's mount mode changed and name the reconnect command instead of
healing silently (a mode switch changes the shape of every entry).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from cartograph import error_codes as codes
from cartograph.cli.app import EXIT_CHECK_FAILED, ConfigOption, JsonOption, app, resolve_config_path
from cartograph.cli.client_files import (
    ServerSpec,
    container_key,
    default_path,
    entry_for,
    needs_bridge,
    plan_edit,
    read_servers,
    write_client_text,
)
from cartograph.cli.output import print_json, print_table, stderr, stdout
from cartograph.errors import CartographError, ConfigError
from cartograph.fsutil import atomic_write_text

PROJECT_FILE: Final = ".cartograph-client.json"
DEFAULT_TOKEN_ENV: Final = "CARTOGRAPH_TOKEN"  # noqa: S105 - a variable name, not a secret
HEALTH_TIMEOUT: Final = 10.0
DEFAULT_ENTRY: Final = "cartograph"


@dataclass(frozen=True)
class ServerShape:
    """What ``/health`` says about a server's endpoints."""

    mount_mode: str
    routed_path: str | None
    catalogs: tuple[str, ...]
    catalog_paths: dict[str, str] = field(default_factory=dict)
    auth: bool = False

    @classmethod
    def from_health(cls, doc: dict[str, Any]) -> ServerShape:
        listed = doc.get("catalogs") or []
        paths = {str(c["name"]): str(c["path"]) for c in listed}
        routed = doc.get("mount_mode") == "routed" and isinstance(doc.get("routed_path"), str)
        return cls(
            mount_mode="routed" if routed else "per-catalog",
            routed_path=str(doc["routed_path"]) if routed else None,
            catalogs=tuple(paths),
            catalog_paths=paths,
            auth=doc.get("auth") == "bearer",
        )


@dataclass
class Connection:
    """One client file wired to Cartograph: which entries it should hold, and why.

    ``kind`` is ``http`` (``entries`` maps entry name → endpoint URL) or
    ``stdio`` (entry name → catalog name, ``""`` for the only one).
    """

    client: str
    client_config: str
    entry: str
    entries: dict[str, str]
    kind: str = "http"
    url: str | None = None
    config: str | None = None
    server_mount_mode: str | None = None
    server_routed_path: str | None = None
    catalogs: list[str] = field(default_factory=list)
    # Set when the server requires a bearer token: the variable each entry's
    # Authorization header (or bridge) names; the token's value is never written.
    token_env: str | None = None

    def spec(self, target: str) -> ServerSpec:
        if self.kind == "stdio":
            assert self.config is not None
            return ServerSpec.stdio_for(Path(self.config), catalog=target or None)
        return ServerSpec.http(target, self.token_env)

    def reconnect_command(self) -> str:
        source = f"--url {self.url}" if self.kind == "http" else f"--config {self.config}"
        return f"cartograph connect {source} --client {self.client}"


@dataclass
class ProjectRecord:
    """The project file: every client connected from this folder."""

    connections: list[Connection] = field(default_factory=list)

    def save(self, path: Path) -> None:
        doc = {"connections": [asdict(c) for c in self.connections]}
        atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")

    def add(self, connection: Connection) -> None:
        """Replace the record of the same client file, keep every other one."""
        same = (connection.client, connection.client_config)
        self.connections = [c for c in self.connections if (c.client, c.client_config) != same] + [
            connection
        ]

    @classmethod
    def load(cls, path: Path) -> ProjectRecord:
        if not path.exists():
            raise ConfigError(
                f"{path} does not exist; run `cartograph connect --client CLIENT` first.",
                code=codes.NO_CLIENT_PROJECT,
            )
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            listed = doc.get("connections", [doc])  # or the older one-client format
            return cls([Connection(**c) for c in listed])
        except (json.JSONDecodeError, TypeError, KeyError) as exc:
            raise ConfigError(
                f"{path} is not a Cartograph client record ({exc}); re-run connect.",
                code=codes.BAD_CLIENT_PROJECT,
            ) from exc

    @classmethod
    def load_or_empty(cls, path: Path) -> ProjectRecord:
        return cls.load(path) if path.exists() else cls()


def fetch_health(url: str, *, token: str | None = None) -> dict[str, Any]:
    """GET ``<url>/health``; raises ConfigError when the server cannot be read."""
    import httpx2

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx2.get(f"{url.rstrip('/')}/health", headers=headers, timeout=HEALTH_TIMEOUT)
        response.raise_for_status()
        doc = response.json()
    except (httpx2.HTTPError, ValueError) as exc:
        raise ConfigError(
            f"cannot read {url}/health: {exc}; is `cartograph serve --http` running?",
            code=codes.HEALTH_UNREACHABLE,
        ) from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{url}/health did not return an object.", code=codes.HEALTH_SHAPE)
    return doc


def expected_entries(url: str, entry: str, shape: ServerShape) -> dict[str, str]:
    """Client entry name → endpoint URL: one for a routed server, else one per catalog."""
    base = url.rstrip("/")
    if shape.routed_path is not None:
        return {entry: base + shape.routed_path}
    if not shape.catalogs:
        raise ConfigError(
            "the server listed no catalogs for this client; pass a token that reaches them "
            "(--token-env).",
            code=codes.NO_VISIBLE_CATALOGS,
        )
    if len(shape.catalogs) == 1:
        return {entry: base + shape.catalog_paths[shape.catalogs[0]]}
    return {f"{entry}-{name}": base + shape.catalog_paths[name] for name in shape.catalogs}


def http_connection(
    url: str,
    client: str,
    target: Path,
    *,
    entry: str = DEFAULT_ENTRY,
    token: str | None = None,
    token_env: str | None = None,
) -> Connection:
    """What to write for a running HTTP server, from its ``/health``.

    Against a server that requires auth, each entry names ``token_env``
    (default :data:`DEFAULT_TOKEN_ENV`) for the client to expand (or the
    bridge to read): without it every request would be refused with 401.
    """
    shape = ServerShape.from_health(fetch_health(url, token=token))
    return Connection(
        client=client,
        client_config=str(target),
        entry=entry,
        entries=expected_entries(url, entry, shape),
        url=url.rstrip("/"),
        server_mount_mode=shape.mount_mode,
        server_routed_path=shape.routed_path,
        catalogs=list(shape.catalogs),
        token_env=(token_env or DEFAULT_TOKEN_ENV) if shape.auth else None,
    )


def stdio_connection(config_file: Path, client: str, target: Path, entry: str) -> Connection:
    """A stdio ``serve`` entry; one per catalog (``--catalog-name``) when there are several."""
    from cartograph.config.catalogs import resolve_catalogs
    from cartograph.config.loader import load_config

    config = load_config(config_file)  # an entry pointing at a broken config would never start
    names = [c.name for c in resolve_catalogs(config, "per-catalog")]
    entries = {entry: ""} if len(names) == 1 else {f"{entry}-{n}": n for n in names}
    return Connection(
        client=client,
        client_config=str(target),
        entry=entry,
        entries=entries,
        kind="stdio",
        config=str(config_file),
        catalogs=names,
    )


def connection_edit(connection: Connection) -> tuple[str, str, list[str]]:
    """The client file's text before and after, and the stale Cartograph entries removed.

    Stale: any Cartograph entry under this entry name that the connection does
    not call for (an older shape's, whether or not it was ever recorded).
    """
    from cartograph.config.mcp_json import is_cartograph_entry

    path = Path(connection.client_config)
    present = read_servers(connection.client, path)
    stale = [
        name
        for name, body in present.items()
        if name not in connection.entries
        and (name == connection.entry or name.startswith(f"{connection.entry}-"))
        and is_cartograph_entry(name, body)
    ]
    specs = {n: connection.spec(t) for n, t in connection.entries.items()}
    old, new = plan_edit(connection.client, path, specs, remove=stale)
    return old, new, stale


# -- doctor ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    client: str
    file: str  # which client file: two connections of one client (project, user) differ here
    entry: str
    problem: str  # ok | missing | stale | orphan | invalid | unreadable
    detail: str


def doctor_findings(connection: Connection) -> list[Finding]:
    """Offline: the file parses, every entry is one the client accepts, ours are current."""
    from cartograph.cli.client_check import entry_problems

    path = Path(connection.client_config)
    client = connection.client

    def finding(entry: str, problem: str, detail: str) -> Finding:
        return Finding(client, str(path), entry, problem, detail)

    try:
        present = read_servers(client, path) if path.exists() else {}
    except CartographError as exc:
        return [finding("*", "unreadable", exc.message)]
    found: list[Finding] = []
    for name, target in connection.entries.items():
        expected = entry_for(client, connection.spec(target))
        if name not in present:
            found.append(finding(name, "missing", f"expected {_describe(expected)} in {path}"))
            continue
        problems = entry_problems(client, present[name], cwd=path.parent)
        if problems:
            found.append(finding(name, "invalid", "; ".join(problems)))
        elif present[name] != expected:
            detail = f"expected {_describe(expected)}, found {_describe(present[name])}"
            found.append(
                finding(name, "stale", f"{detail}; run `{connection.reconnect_command()}`")
            )
        else:
            found.append(finding(name, "ok", _describe(expected)))
    for name in sorted(set(present) - set(connection.entries)):
        if name == connection.entry or name.startswith(f"{connection.entry}-"):
            detail = f"left by another server shape; run `{connection.reconnect_command()}`"
            found.append(finding(name, "orphan", detail))
            continue
        problems = entry_problems(client, present[name], cwd=path.parent)
        found.append(finding(name, "invalid" if problems else "ok", "; ".join(problems) or "-"))
    return found


def _describe(entry: Any) -> str:
    if isinstance(entry, dict) and "url" in entry:
        return str(entry["url"])
    if isinstance(entry, dict) and "command" in entry:
        return " ".join([str(entry["command"]), *map(str, entry.get("args") or [])])
    return json.dumps(entry)


def mode_change(connection: Connection, health: dict[str, Any]) -> str | None:
    """A message when the live server's shape differs from the recorded one, else None."""
    shape = ServerShape.from_health(health)
    if shape.mount_mode != connection.server_mount_mode:
        return (
            f"mount mode changed: {connection.server_mount_mode} -> {shape.mount_mode}; "
            f"run `{connection.reconnect_command()}` to rewrite the client entries"
        )
    if shape.routed_path != connection.server_routed_path:
        return (
            f"routed path changed: {connection.server_routed_path} -> {shape.routed_path}; "
            f"run `{connection.reconnect_command()}`"
        )
    return None


ProjectOption = Annotated[
    Path, typer.Option("--project-file", help="Where connect records the connections.")
]
TokenEnvOption = Annotated[
    str | None,
    typer.Option("--token-env", help="Env var holding a bearer token for reading /health."),
]


def _token(token_env: str | None) -> str | None:
    return os.environ.get(token_env) if token_env else None


@app.command("doctor")
def doctor(
    project_file: ProjectOption = Path(PROJECT_FILE),
    as_json: JsonOption = False,
) -> None:
    """Offline: is every connected client's file valid, and are its entries the current ones?"""
    record = ProjectRecord.load(project_file)
    findings = [f for c in record.connections for f in doctor_findings(c)]
    if as_json:
        print_json([asdict(f) for f in findings])
    else:
        print_table(
            f"client entries ({len(record.connections)} client files)",
            ("client", "file", "entry", "state", "detail"),
            [(f.client, f.file, f.entry, f.problem, f.detail) for f in findings],
        )
    if any(f.problem != "ok" for f in findings):
        raise typer.Exit(EXIT_CHECK_FAILED)


@app.command("client-status")
def client_status(
    project_file: ProjectOption = Path(PROJECT_FILE),
    token_env: TokenEnvOption = None,
    as_json: JsonOption = False,
) -> None:
    """Client side: is each HTTP server still shaped the way this project was connected to it?"""
    record = ProjectRecord.load(project_file)
    changes: dict[str, str | None] = {}
    for connection in (c for c in record.connections if c.kind == "http" and c.url):
        assert connection.url is not None
        health = fetch_health(connection.url, token=_token(token_env))
        changes[f"{connection.client} {connection.url}"] = mode_change(connection, health)
        change = changes[f"{connection.client} {connection.url}"]
        if not as_json:
            ok = f"ok: {connection.url} is still {connection.server_mount_mode}"
            stdout.print(change or ok, highlight=False)
    if as_json:
        print_json(changes)
    if any(changes.values()):
        raise typer.Exit(EXIT_CHECK_FAILED)


# -- connect --------------------------------------------------------------------------


ClientOption = Annotated[
    str,
    typer.Option("--client", help="claude-desktop, claude-code, cursor, vscode or inspector."),
]


@app.command()
def connect(
    client: ClientOption,
    config_path: ConfigOption = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the entries; write nothing.")
    ] = False,
    name: Annotated[str, typer.Option("--name", help="Entry name in the client.")] = DEFAULT_ENTRY,
    target: Annotated[
        Path | None, typer.Option("--target", help="Client config file (default: the client's).")
    ] = None,
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope",
            help="project (a file in this folder, the default) or user/global (the one in your "
            "home folder) for Claude Code, Cursor and VS Code.",
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option("--url", help="A running `serve --http` server: entries follow its /health."),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            help="With --url: env var with a bearer token; entries name it, never its value.",
        ),
    ] = None,
    adopt: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="Also move the client's other MCP servers behind Cartograph: import them into "
            "the Cartograph config and remove them from the client file (backups kept).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the diff of every file; write nothing.")
    ] = False,
    project_file: ProjectOption = Path(PROJECT_FILE),
    json_out: JsonOption = False,
) -> None:
    """Write (or print) the entries this client accepts for Cartograph, keeping a backup."""
    path = target or default_path(client, scope=scope)
    if url is not None:
        connection = http_connection(
            url, client, path, entry=name, token=_token(token_env), token_env=token_env
        )
    else:
        connection = stdio_connection(
            resolve_config_path(config_path).resolve(), client, path, name
        )
    if print_only:
        entries = {n: entry_for(client, connection.spec(t)) for n, t in connection.entries.items()}
        print_json({container_key(client): entries})
        return
    if adopt:
        _adopt(connection, resolve_config_path(config_path), dry_run, project_file, json_out)
        return
    elif dry_run:
        old, new, _ = connection_edit(connection)
        _print_diffs({path: (old, new)}, json_out)
        return
    done = _write_connection(connection, project_file)
    if json_out:
        print_json(done)
    else:
        _print_written(done)


def _adopt(
    connection: Connection, config_file: Path, dry_run: bool, project_file: Path, json_out: bool
) -> None:
    from cartograph.cli.adopt import plan_adoption, print_adoption, write_config

    path = Path(connection.client_config)
    _, _, stale = connection_edit(connection)
    specs = {n: connection.spec(t) for n, t in connection.entries.items()}
    plan = plan_adoption(connection.client, path, config_file, specs, stale)
    if dry_run:
        diffs = {
            config_file: (plan.old_config, plan.new_config),
            path: (plan.old_client, plan.new_client),
        }
        _print_diffs(diffs, json_out)
        return
    write_config(config_file, plan)
    done = _write_connection(connection, project_file, (plan.new_client, stale))
    done |= {"config": str(config_file), "adopted": list(plan.moving), "kept": plan.kept}
    if json_out:
        print_json(done)
        return
    _print_written(done)
    print_adoption(plan, config_file, path)


def _print_diffs(diffs: dict[Path, tuple[str, str]], json_out: bool) -> None:
    """``--dry-run``: each file's unified diff (``--json``: file → diff, empty when unchanged)."""
    texts = {str(path): unified_diff(path, old, new) for path, (old, new) in diffs.items()}
    if json_out:
        print_json({"diffs": texts})
        return
    for text in texts.values():
        stdout.print(text or "no change", highlight=False, markup=False)


def unified_diff(path: Path, old: str, new: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), str(path), f"{path} (new)"
    )
    return "".join(lines)


def _write_connection(
    connection: Connection, project_file: Path, edit: tuple[str, list[str]] | None = None
) -> dict[str, Any]:
    """Write the client file (``edit``: text already planned, and the stale entries it drops);
    returns what was done, for ``connect --json`` and :func:`_print_written`."""
    if edit is None:
        _, new, stale = connection_edit(connection)
    else:
        new, stale = edit
    written = write_client_text(Path(connection.client_config), new)
    record = ProjectRecord.load_or_empty(project_file)
    record.add(connection)
    record.save(project_file)
    return {
        "client": connection.client,
        "entries": list(connection.entries),
        "path": str(written.path),
        "backup": str(written.backup) if written.backup else None,
        "removed_stale": list(stale),
        "server_shape": _server_shape(connection),
        "project_file": str(project_file),
        "bridged": needs_bridge(
            connection.client, connection.spec(next(iter(connection.entries.values())))
        ),
        "token_env": connection.token_env,
    }


def _server_shape(connection: Connection) -> str | None:
    if connection.kind != "http":
        return None
    if connection.server_routed_path:
        return f"routed ({connection.server_routed_path}): one entry"
    return f"per-catalog: {len(connection.entries)} entries"


def _print_written(done: dict[str, Any]) -> None:
    backup = f" (backup: {done['backup']})" if done["backup"] else ""
    stale = done["removed_stale"]
    stdout.print(
        f"wrote {', '.join(done['entries'])} to {done['path']}{backup}"
        + (f"; removed stale {', '.join(stale)}" if stale else ""),
        highlight=False,
    )
    if done["server_shape"] is not None:
        stdout.print(f"server shape: {done['server_shape']}", highlight=False)
    stdout.print(f"recorded the connection in {done['project_file']}", highlight=False)
    client, token_env = done["client"], done["token_env"]
    if done["bridged"]:
        stdout.print(
            f"{client} takes only stdio commands here: the entries run "
            "`cartograph bridge`, which forwards to the HTTP server",
            highlight=False,
        )
    if token_env is not None:
        where = "in the entry's env" if done["bridged"] else f"where {client} runs"
        stdout.print(
            f"the server requires a bearer token: the entries read ${token_env}; "
            f"set {token_env} {where}",
            highlight=False,
        )


# -- bridge ---------------------------------------------------------------------------


@app.command()
def bridge(
    url: Annotated[str, typer.Option("--url", help="The streamable HTTP endpoint to reach.")],
    token_env: Annotated[
        str | None,
        typer.Option("--token-env", help="Env var holding the bearer token to send."),
    ] = None,
) -> None:
    """Serve stdio and forward every message to a streamable HTTP endpoint (no Node needed)."""
    import anyio

    from cartograph.server.stdio.bridge import run_bridge

    headers = {}
    if token_env is not None:
        token = os.environ.get(token_env)
        if not token:
            raise ConfigError(
                f"--token-env {token_env}: the variable is not set; set it in the client "
                "entry's env",
                code=codes.BRIDGE_TOKEN_MISSING,
            )
        headers["Authorization"] = f"Bearer {token}"
    stderr.print(f"cartograph bridge: stdio <-> {url}", highlight=False)
    anyio.run(run_bridge, url, headers)
