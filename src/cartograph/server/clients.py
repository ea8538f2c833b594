"""MCP client config files: where each client keeps its server list, and how to merge ours in.

Each supported client stores a JSON file with a map of server entries
(``mcpServers``, or ``servers`` for VS Code). We merge one entry into it:
read, replace our key, keep a ``.bak`` copy of the previous file, and write
atomically (P-REL-9), leaving every other entry untouched.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cartograph.errors import ConfigError
from cartograph.fsutil import atomic_write_text

CLIENTS: Final = ("claude-desktop", "claude-code", "cursor", "vscode")


@dataclass(frozen=True)
class ServerSpec:
    """How a client reaches the proxy: a command (stdio) or a URL (streamable HTTP)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def stdio_for(cls, config_file: Path) -> ServerSpec:
        """Run this very installation's CLI, so the entry works whatever is on PATH."""
        return cls(
            command=sys.executable,
            args=("-m", "cartograph.cli.main", "serve", "--config", str(config_file)),
        )

    @classmethod
    def http(cls, url: str, headers: dict[str, str] | None = None) -> ServerSpec:
        return cls(url=url, headers=tuple(sorted((headers or {}).items())))


@dataclass(frozen=True)
class Written:
    path: Path
    backup: Path | None


def container_key(client: str) -> str:
    return "servers" if _checked(client) == "vscode" else "mcpServers"


def default_path(client: str, *, home: Path | None = None, cwd: Path | None = None) -> Path:
    """The file each client reads; project-scoped clients use the current folder."""
    home = home or Path.home()
    cwd = cwd or Path.cwd()
    client = _checked(client)
    if client == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library/Application Support/Claude/claude_desktop_config.json"
        appdata = os.environ.get("APPDATA")
        if sys.platform == "win32" and appdata:
            return Path(appdata) / "Claude/claude_desktop_config.json"
        return home / ".config/Claude/claude_desktop_config.json"
    if client == "claude-code":
        return cwd / ".mcp.json"
    if client == "cursor":
        return cwd / ".cursor/mcp.json"
    return cwd / ".vscode/mcp.json"


def env_reference(client: str, variable: str) -> str:
    """How ``client``'s config file refers to an environment variable.

    Client entries must never hold a secret's value; they name the variable
    and each client expands it when it starts the connection.
    """
    if _checked(client) in ("vscode", "cursor"):
        return f"${{env:{variable}}}"
    return f"${{{variable}}}"


def entry_for(client: str, spec: ServerSpec) -> dict[str, Any]:
    """One server entry in ``client``'s dialect."""
    client = _checked(client)
    if spec.url is not None:
        entry_http: dict[str, Any] = {"url": spec.url}
        if client in ("vscode", "claude-code"):
            entry_http = {"type": "http", **entry_http}
        if spec.headers:
            entry_http["headers"] = dict(spec.headers)
        return entry_http
    entry: dict[str, Any] = {"command": spec.command, "args": list(spec.args)}
    if client in ("vscode", "claude-code"):
        entry = {"type": "stdio", **entry}
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
    from cartograph.config import jsonc  # lazily: the package pulls pydantic (CLI start-up)

    target = path or default_path(client)
    text = read_client_text(target)
    key = container_key(client)
    read_servers(client, target, text)  # refuses a file that is not JSON(C) or has no object
    for name, spec in specs.items():
        text = jsonc.set_entry(text, key, name, entry_for(client, spec))
    return write_client_text(target, text)


def remove_entries(client: str, path: Path, names: Iterable[str]) -> Written | None:
    """Remove ``names`` from the client's file (comments kept, backup made); None if none."""
    from cartograph.config import jsonc

    text = read_client_text(path)
    present = read_servers(client, path, text)
    gone = [n for n in names if n in present]
    if not gone:
        return None
    for name in gone:
        text = jsonc.remove_entry(text, container_key(client), name)
    return write_client_text(path, text)


def read_client_text(path: Path) -> str:
    """The file's text, or an empty object when it does not exist yet."""
    if not path.exists():
        return "{}\n"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text ({exc.reason}); fix or move it, then re-run",
            code="client_config_json",
            file=str(path),
        ) from None
    return text if text.strip() else "{}\n"


def read_servers(client: str, path: Path, text: str | None = None) -> dict[str, Any]:
    """The client's server entries; a ConfigError naming file and line when it cannot be read."""
    from cartograph.config import jsonc

    data = jsonc.loads(read_client_text(path) if text is None else text, where=str(path))
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: top level is not an object", code="client_config_shape", file=str(path)
        )
    key = container_key(client)
    servers = data.get(key, {})
    if not isinstance(servers, dict):
        raise ConfigError(
            f"{path}: {key!r} is not an object; fix the file by hand first",
            code="client_config_shape",
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
            f"unknown client {client!r}; use one of: {', '.join(CLIENTS)}", code="unknown_client"
        )
    return client
