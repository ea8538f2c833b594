"""MCP client config files: where each client keeps its server list, and what entry it accepts.

Each supported client stores a JSON(C) file with a map of server entries
(``mcpServers``, or ``servers`` for VS Code). :data:`DIALECTS` says, per
client, what an entry may be: Claude Desktop's file runs only stdio commands,
so an HTTP server is reached through ``cartograph bridge`` (a stdio command);
the Inspector's file has no headers, so an HTTP server that wants a token
goes through the bridge too. We merge entries in place (comments kept), keep
a ``.bak`` copy of the previous file, and write atomically (P-REL-9).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from cartograph import error_codes as codes
from cartograph.errors import ConfigError
from cartograph.fsutil import atomic_write_text
from cartograph.suggest import did_you_mean

CLIENTS: Final = ("claude-desktop", "claude-code", "cursor", "vscode", "inspector")
SCOPES: Final = ("project", "user")
"""``project``: a file in the current folder; ``user``: the one in the home folder (``global``)."""
CLI_MODULE: Final = ("-m", "cartograph.cli.main")


@dataclass(frozen=True)
class Dialect:
    """What one client's config file accepts."""

    container: str
    http_type: str | None  # the "type" of an HTTP entry; None: no HTTP entries at all
    stdio_type: bool  # whether a stdio entry carries "type": "stdio"
    headers: bool  # whether an HTTP entry may carry headers
    env_syntax: Literal["plain", "env", "none"]  # ${VAR}, ${env:VAR}, or no expansion
    scopes: tuple[str, ...]


DIALECTS: Final[dict[str, Dialect]] = {
    "claude-desktop": Dialect("mcpServers", None, False, False, "none", ("user",)),
    "claude-code": Dialect("mcpServers", "http", True, True, "plain", SCOPES),
    "cursor": Dialect("mcpServers", "", False, True, "env", SCOPES),
    "vscode": Dialect("servers", "http", True, True, "env", SCOPES),
    "inspector": Dialect("mcpServers", "streamable-http", True, False, "none", ("project",)),
}
"""``http_type == ""``: HTTP entries are written without a ``type`` (Cursor infers it)."""


@dataclass(frozen=True)
class ServerSpec:
    """How a client reaches the proxy: a command (stdio) or a URL (streamable HTTP).

    ``token_env`` names the variable holding a bearer token for ``url``; each
    client's entry refers to it in that client's syntax, never by value.
    """

    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    token_env: str | None = None

    @classmethod
    def stdio_for(cls, config_file: Path, *, catalog: str | None = None) -> ServerSpec:
        """Run this very installation's CLI, so the entry works whatever is on PATH."""
        extra = ("--catalog-name", catalog) if catalog else ()
        return cls(
            command=sys.executable,
            args=(*CLI_MODULE, "serve", "--config", str(config_file), *extra),
        )

    @classmethod
    def http(cls, url: str, token_env: str | None = None) -> ServerSpec:
        return cls(url=url, token_env=token_env)

    def bridged(self) -> ServerSpec:
        """The stdio command that bridges to this HTTP spec (``cartograph bridge``)."""
        assert self.url is not None
        token = ("--token-env", self.token_env) if self.token_env else ()
        return ServerSpec(
            command=sys.executable, args=(*CLI_MODULE, "bridge", "--url", self.url, *token)
        )


@dataclass(frozen=True)
class Written:
    path: Path
    backup: Path | None


def dialect(client: str) -> Dialect:
    return DIALECTS[_checked(client)]


def container_key(client: str) -> str:
    return dialect(client).container


def default_path(
    client: str, *, scope: str | None = None, home: Path | None = None, cwd: Path | None = None
) -> Path:
    """The file ``client`` reads for ``scope`` (default: its first, usually ``project``)."""
    home = home or Path.home()
    cwd = cwd or Path.cwd()
    scope = _scope(client, scope)
    if client == "claude-desktop":
        return _desktop_path(home)
    if client == "inspector":
        return cwd / "mcp-inspector.json"
    if scope == "user":
        return {
            "claude-code": home / ".claude.json",
            "cursor": home / ".cursor/mcp.json",
            "vscode": _vscode_user_dir(home) / "mcp.json",
        }[client]
    return {
        "claude-code": cwd / ".mcp.json",
        "cursor": cwd / ".cursor/mcp.json",
        "vscode": cwd / ".vscode/mcp.json",
    }[client]


def _scope(client: str, scope: str | None) -> str:
    allowed = dialect(client).scopes
    if scope in (None, ""):
        return allowed[0]
    chosen = "user" if scope == "global" else scope
    if chosen not in allowed:
        raise ConfigError(
            f"--scope {scope}: {client} has {', '.join(allowed)} "
            "(project: a file in this folder; user/global: the one in your home folder)",
            code=codes.UNKNOWN_SCOPE,
        )
    return str(chosen)


def _desktop_path(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library/Application Support/Claude/claude_desktop_config.json"
    appdata = os.environ.get("APPDATA")
    if sys.platform == "win32" and appdata:
        return Path(appdata) / "Claude/claude_desktop_config.json"
    return home / ".config/Claude/claude_desktop_config.json"


def _vscode_user_dir(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library/Application Support/Code/User"
    appdata = os.environ.get("APPDATA")
    if sys.platform == "win32" and appdata:
        return Path(appdata) / "Code/User"
    return home / ".config/Code/User"


def env_reference(client: str, variable: str) -> str:
    """How ``client``'s config file refers to an environment variable.

    Client entries must never hold a secret's value; they name the variable
    and each client expands it when it starts the connection.
    """
    if dialect(client).env_syntax == "env":
        return f"${{env:{variable}}}"
    return f"${{{variable}}}"


def needs_bridge(client: str, spec: ServerSpec) -> bool:
    """An HTTP spec the client cannot take as is: no HTTP entries, or a token but no headers."""
    if spec.url is None:
        return False
    kind = dialect(client)
    return kind.http_type is None or (spec.token_env is not None and not kind.headers)


def entry_for(client: str, spec: ServerSpec) -> dict[str, Any]:
    """One server entry in ``client``'s dialect (HTTP through the bridge where it must)."""
    kind = dialect(client)
    if needs_bridge(client, spec):
        spec = spec.bridged()
    if spec.url is not None:
        entry_http: dict[str, Any] = {"type": kind.http_type} if kind.http_type else {}
        entry_http["url"] = spec.url
        if spec.token_env is not None:
            value = f"Bearer {env_reference(client, spec.token_env)}"
            entry_http["headers"] = {"Authorization": value}
        return entry_http
    entry: dict[str, Any] = {"type": "stdio"} if kind.stdio_type else {}
    entry.update({"command": spec.command, "args": list(spec.args)})
    return entry


def render_entry(client: str, name: str, spec: ServerSpec) -> dict[str, Any]:
    """What ``--print`` shows: the entry inside its container key, ready to paste."""
    return {container_key(client): {name: entry_for(client, spec)}}


def install_entry(client: str, name: str, spec: ServerSpec, *, path: Path | None = None) -> Written:
    """Merge ``name`` into the client's file atomically, keeping a backup of the old file."""
    return install_entries(client, {name: spec}, path=path)


def install_entries(
    client: str, specs: dict[str, ServerSpec], *, path: Path | None = None
) -> Written:
    """Like :func:`install_entry` for several entries at once (e.g. one per catalog).

    The file is edited in place (:mod:`cartograph.config.jsonc`): comments,
    key order and every other entry stay as the user wrote them.
    """
    target = path or default_path(client)
    _, new = plan_edit(client, target, specs)
    return write_client_text(target, new)


def remove_entries(client: str, path: Path, names: Iterable[str]) -> Written | None:
    """Remove ``names`` from the client's file (comments kept, backup made); None if none."""
    old, new = plan_edit(client, path, {}, remove=names)
    return write_client_text(path, new) if new != old else None


def plan_edit(
    client: str, path: Path, specs: dict[str, ServerSpec], *, remove: Iterable[str] = ()
) -> tuple[str, str]:
    """The file's text before and after setting ``specs`` and removing ``remove`` (no write)."""
    from cartograph.config import jsonc  # lazily: the package pulls pydantic (CLI start-up)

    old = read_client_text(path)
    present = read_servers(client, path, old)  # refuses a file that is not JSON(C)
    key = container_key(client)
    text = old
    for name, spec in specs.items():
        text = jsonc.set_entry(text, key, name, entry_for(client, spec))
    for name in remove:
        if name in present and name not in specs:
            text = jsonc.remove_entry(text, key, name)
    return old, text


def read_client_text(path: Path) -> str:
    """The file's text, or an empty object when it does not exist yet."""
    if not path.exists():
        return "{}\n"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text ({exc.reason}); fix or move it, then re-run",
            code=codes.CLIENT_CONFIG_JSON,
            file=str(path),
        ) from None
    return text if text.strip() else "{}\n"


def read_servers(client: str, path: Path, text: str | None = None) -> dict[str, Any]:
    """The client's server entries; a ConfigError naming file and line when it cannot be read."""
    from cartograph.config import jsonc

    data = jsonc.loads(read_client_text(path) if text is None else text, where=str(path))
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: top level is not an object", code=codes.CLIENT_CONFIG_SHAPE, file=str(path)
        )
    key = container_key(client)
    servers = data.get(key, {})
    if not isinstance(servers, dict):
        raise ConfigError(
            f"{path}: {key!r} is not an object; fix the file by hand first",
            code=codes.CLIENT_CONFIG_SHAPE,
            file=str(path),
        )
    return servers


def write_client_text(path: Path, text: str) -> Written:
    """Write atomically, keeping the previous file as ``.bak`` (P-REL-9)."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644  # a private file stays so
    backup = _backup(path)
    atomic_write_text(path, text if text.endswith("\n") else text + "\n", mode=mode)
    return Written(path=path, backup=backup)


def _backup(path: Path) -> Path | None:
    if not path.exists():
        return None
    backup = path.with_name(path.name + ".bak")
    shutil.copy2(path, backup)
    return backup


def _checked(client: str) -> str:
    if client not in CLIENTS:
        raise ConfigError(
            f"unknown client {client!r}; {did_you_mean(client, CLIENTS, what='use one of')}",
            code=codes.UNKNOWN_CLIENT,
        )
    return client
