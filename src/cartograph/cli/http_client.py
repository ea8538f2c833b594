"""The client side of an HTTP server: connect, doctor, client-status (D187).

The client learns the server's shape from ``/health``, never assumes it: a
routed server (``mount_mode: "routed"`` and ``routed_path``) gets ONE client
entry; any other server gets one entry per catalog. What ``connect`` learned
is recorded in a small project file (:data:`PROJECT_FILE`) so that ``doctor``
can derive the expected entries offline and report what is missing or stale,
and ``client-status`` can notice that the server's mount mode changed and
name the reconnect command instead of healing silently (a mode switch changes
the shape of every entry).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from cartograph.cli.app import JsonOption, app
from cartograph.cli.output import print_json, print_table, stdout
from cartograph.errors import ConfigError
from cartograph.fsutil import atomic_write_text
from cartograph.server.clients import (
    ServerSpec,
    container_key,
    default_path,
    entry_for,
    env_reference,
    install_entries,
    read_servers,
    remove_entries,
)

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
class ProjectRecord:
    """The project file: which server this project is wired to, and how."""

    url: str
    client: str
    client_config: str
    entry: str
    server_mount_mode: str
    server_routed_path: str | None
    catalogs: list[str]
    entries: dict[str, str]
    # Set when the server requires a bearer token: the variable each entry's
    # Authorization header names (the token's value is never written).
    token_env: str | None = None

    def spec(self, url: str) -> ServerSpec:
        """The client entry for ``url``: with an Authorization placeholder when auth is on."""
        return http_spec(self.client, url, self.token_env)

    def save(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path) -> ProjectRecord:
        if not path.exists():
            raise ConfigError(
                f"{path} does not exist; run `cartograph connect --url URL --client CLIENT` first.",
                code="no_client_project",
            )
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, TypeError) as exc:
            raise ConfigError(
                f"{path} is not a Cartograph client record ({exc}); re-run connect.",
                code="bad_client_project",
            ) from exc

    def reconnect_command(self) -> str:
        return f"cartograph connect --url {self.url} --client {self.client}"


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
            code="health_unreachable",
        ) from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{url}/health did not return an object.", code="health_shape")
    return doc


def http_spec(client: str, url: str, token_env: str | None) -> ServerSpec:
    """An HTTP entry; with ``token_env``, an ``Authorization`` header that names the variable."""
    if token_env is None:
        return ServerSpec.http(url)
    return ServerSpec.http(url, {"Authorization": f"Bearer {env_reference(client, token_env)}"})


def expected_entries(url: str, entry: str, shape: ServerShape) -> dict[str, str]:
    """Client entry name → endpoint URL: one for a routed server, else one per catalog."""
    base = url.rstrip("/")
    if shape.routed_path is not None:
        return {entry: base + shape.routed_path}
    if not shape.catalogs:
        raise ConfigError(
            "the server listed no catalogs for this client; pass a token that reaches them "
            "(--token-env).",
            code="no_visible_catalogs",
        )
    if len(shape.catalogs) == 1:
        return {entry: base + shape.catalog_paths[shape.catalogs[0]]}
    return {f"{entry}-{name}": base + shape.catalog_paths[name] for name in shape.catalogs}


def connect_http(
    url: str,
    client: str,
    *,
    entry: str = DEFAULT_ENTRY,
    target: Path | None = None,
    project_file: Path | None = None,
    token: str | None = None,
    token_env: str | None = None,
    write: bool = True,
) -> ProjectRecord:
    """Write the entries ``/health`` calls for, drop ones an earlier shape left behind.

    ``write=False`` (``--print``) computes the same record and touches no file.

    Against a server that requires auth, each entry carries an
    ``Authorization: Bearer`` header naming ``token_env`` (default
    :data:`DEFAULT_TOKEN_ENV`) for the client to expand: without it the
    client's every request would be refused with 401.
    """
    shape = ServerShape.from_health(fetch_health(url, token=token))
    wanted = expected_entries(url, entry, shape)
    config_path = target or default_path(client)
    project = project_file or Path(PROJECT_FILE)
    previous = ProjectRecord.load(project).entries if project.exists() else {}
    variable = (token_env or DEFAULT_TOKEN_ENV) if shape.auth else None
    record = ProjectRecord(
        url=url.rstrip("/"),
        client=client,
        client_config=str(config_path),
        entry=entry,
        server_mount_mode=shape.mount_mode,
        server_routed_path=shape.routed_path,
        catalogs=list(shape.catalogs),
        entries=wanted,
        token_env=variable,
    )
    if not write:
        return record
    specs = {n: http_spec(client, u, variable) for n, u in wanted.items()}
    install_entries(client, specs, path=config_path)
    remove_entries(client, config_path, set(previous) - set(wanted))
    record.save(project)
    return record


@dataclass(frozen=True)
class Finding:
    entry: str
    problem: str  # ok | missing | stale | orphan
    detail: str


def doctor_findings(record: ProjectRecord) -> list[Finding]:
    """Offline: the entries the record calls for against the client's file."""
    shape = ServerShape(
        record.server_mount_mode,
        record.server_routed_path,
        tuple(record.catalogs),
        {c: f"/mcp/{c}" for c in record.catalogs},
    )
    wanted = expected_entries(record.url, record.entry, shape)
    present = _client_entries(record.client, Path(record.client_config))
    findings: list[Finding] = []
    for name, url in wanted.items():
        if name not in present:
            findings.append(Finding(name, "missing", f"expected {url}"))
        elif present[name] != entry_for(record.client, record.spec(url)):
            findings.append(Finding(name, "stale", f"expected {url}, found {present[name]}"))
        else:
            findings.append(Finding(name, "ok", url))
    for name in sorted(set(present) - set(wanted)):
        if name == record.entry or name.startswith(f"{record.entry}-"):
            findings.append(Finding(name, "orphan", "left by another server shape; re-run connect"))
    return findings


def _client_entries(client: str, path: Path) -> dict[str, Any]:
    return read_servers(client, path) if path.exists() else {}


def mode_change(record: ProjectRecord, health: dict[str, Any]) -> str | None:
    """A message when the live server's shape differs from the recorded one, else None."""
    shape = ServerShape.from_health(health)
    if shape.mount_mode != record.server_mount_mode:
        return (
            f"mount mode changed: {record.server_mount_mode} -> {shape.mount_mode}; "
            f"run `{record.reconnect_command()}` to rewrite the client entries"
        )
    if shape.routed_path != record.server_routed_path:
        return (
            f"routed path changed: {record.server_routed_path} -> {shape.routed_path}; "
            f"run `{record.reconnect_command()}`"
        )
    return None


ProjectOption = Annotated[
    Path, typer.Option("--project-file", help="Where connect records the server's shape.")
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
    """Offline: are this project's client entries the ones the recorded server calls for?"""
    record = ProjectRecord.load(project_file)
    findings = doctor_findings(record)
    if as_json:
        print_json([asdict(f) for f in findings])
    else:
        print_table(
            f"{record.client} entries for {record.url} ({record.server_mount_mode})",
            ("entry", "state", "detail"),
            [(f.entry, f.problem, f.detail) for f in findings],
        )
    if any(f.problem != "ok" for f in findings):
        raise typer.Exit(1)


@app.command("client-status")
def client_status(
    project_file: ProjectOption = Path(PROJECT_FILE),
    token_env: TokenEnvOption = None,
    as_json: JsonOption = False,
) -> None:
    """Client side: is the server still shaped the way this project was connected to it?"""
    record = ProjectRecord.load(project_file)
    health = fetch_health(record.url, token=_token(token_env))
    change = mode_change(record, health)
    if as_json:
        print_json({"url": record.url, "recorded": record.server_mount_mode, "change": change})
    else:
        stdout.print(change or f"ok: {record.url} is still {record.server_mount_mode}")
    if change is not None:
        raise typer.Exit(1)


def connect_http_command(
    url: str,
    client: str,
    *,
    name: str,
    target: Path | None,
    token_env: str | None,
    print_only: bool = False,
) -> None:
    """What ``cartograph connect --url`` runs (the gateway's ``connect`` delegates here)."""
    record = connect_http(
        url,
        client,
        entry=name,
        target=target,
        token=_token(token_env),
        token_env=token_env,
        write=not print_only,
    )
    if print_only:
        entries = {n: entry_for(client, record.spec(u)) for n, u in record.entries.items()}
        print_json({container_key(client): entries})
        return
    shape = (
        f"routed ({record.server_routed_path}): one entry"
        if record.server_routed_path
        else f"per-catalog: {len(record.entries)} entries"
    )
    stdout.print(f"wrote {', '.join(record.entries)} to {record.client_config} [{shape}]")
    stdout.print(f"recorded the server's shape in {PROJECT_FILE}", highlight=False)
    if record.token_env is not None:
        stdout.print(
            f"the server requires a bearer token: the entries send `Authorization: Bearer "
            f"${record.token_env}`; set {record.token_env} where {record.client} runs",
            highlight=False,
        )
