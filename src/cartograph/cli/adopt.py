"""``connect --adopt``: move a client's MCP servers behind Cartograph (the CLI writes the plan).

The client keeps paying for every server it lists (each one's tool list goes
into every conversation); behind Cartograph they cost three tools. Adopting
appends each of the client's other servers to the Cartograph config as an
``[mcpServers.NAME]`` table (the client's own shape, which the loader reads),
removes them from the client file, and adds Cartograph's entry — with a
``.bak`` of both files. Nothing is written unless the new config loads, so a
server that Cartograph would refuse stays where it was. ``--dry-run`` prints
the diff of both files and writes nothing.

Folder variables (``${workspaceFolder}``, ``${userHome}``) are resolved for
the client file they came from, and ``${env:VAR}`` becomes ``${VAR}``; a VS
Code ``${input:id}`` cannot move (nobody would be prompted): that server stays in
the client file, named with the reason, and the others move.
A relative ``envFile`` is made absolute, as it was relative to the client file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cartograph import error_codes as codes
from cartograph.cli.client_files import ServerSpec, plan_edit, read_servers
from cartograph.errors import ConfigError
from cartograph.fsutil import atomic_write_text

_FOLDER_VARS: Final = re.compile(r"\$\{(workspaceFolder|workspaceFolderBasename|userHome)\}")
_ENV_VAR: Final = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Adoption:
    """Both files before and after, and the servers that move (nothing written yet)."""

    old_config: str
    new_config: str
    old_client: str
    new_client: str
    moving: tuple[str, ...]
    kept: dict[str, str] = field(default_factory=dict)
    """Servers left in the client file, each with why it cannot move."""


def plan_adoption(
    client: str,
    client_file: Path,
    config_path: Path,
    specs: dict[str, ServerSpec],
    stale: list[str],
) -> Adoption:
    """Import the client's other servers into ``config_path``; leave only Cartograph's entries.

    Raises (and so writes nothing) when the new config would not load.
    """
    from cartograph.config.mcp_json import is_cartograph_entry

    present = read_servers(client, client_file)
    others = {n: b for n, b in present.items() if not is_cartograph_entry(n, b)}
    kept = _unmovable(others, client_file)
    moving = {n: b for n, b in others.items() if n not in kept}
    old_config = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    new_config = old_config + adoption_toml(moving, client_file)
    _check_loads(new_config, config_path, moving)
    old_client, new_client = plan_edit(client, client_file, specs, remove=[*stale, *moving])
    return Adoption(old_config, new_config, old_client, new_client, tuple(moving), kept)


def _unmovable(servers: dict[str, Any], client_file: Path) -> dict[str, str]:
    """Servers that cannot move (a VS Code ``${input:…}``), each with the refusal's message.

    They stay in the client file, which can still prompt for them; the others move.
    """
    kept = {}
    for name, body in servers.items():
        try:
            adoption_toml({name: body}, client_file)
        except ConfigError as exc:
            if exc.code != codes.CONFIG_INPUT_VARIABLE:
                raise
            kept[name] = exc.message
    return kept


def write_config(config_path: Path, adoption: Adoption) -> None:
    """The new config, atomically, the old one kept as ``.bak``."""
    if adoption.old_config:
        backup = config_path.with_name(config_path.name + ".bak")
        atomic_write_text(backup, adoption.old_config)
    atomic_write_text(config_path, adoption.new_config)


def print_adoption(adoption: Adoption, config_path: Path, client_file: Path) -> None:
    """What moved, what stayed and why, and the cards the moved servers now need."""
    from cartograph.cli.output import stdout

    moved = ", ".join(adoption.moving) or "none"
    stdout.print(f"adopted into {config_path}: {moved}", highlight=False)
    for name, reason in adoption.kept.items():
        stdout.print(f"kept in {client_file}: {name}: {reason}", highlight=False, markup=False)
    if adoption.moving:
        servers = " ".join(f"--server {n}" for n in adoption.moving)
        stdout.print(f"sign their cards: `cartograph bootstrap {servers}`", highlight=False)


def adoption_toml(servers: dict[str, Any], client_file: Path) -> str:
    """``[mcpServers.NAME]`` tables for ``servers``, variables made portable."""
    from cartograph.config.expand import Folders
    from cartograph.config.mcp_json import ENV_FILE

    folders = Folders.for_file(client_file).predefined()
    blocks = [f"\n# adopted from {client_file}\n"] if servers else []
    for name, body in servers.items():
        where = f"{client_file}: server {name!r}"
        if not isinstance(body, dict):
            raise ConfigError(f"{where}: an entry must be an object", code=codes.ADOPT_BAD_ENTRY)
        lines = [f"[mcpServers.{json.dumps(name)}]"]
        for key, value in body.items():
            value = _portable(value, folders, where)
            if key == ENV_FILE and isinstance(value, str):
                value = _anchored(value, client_file.parent)
            lines.append(f"{json.dumps(key)} = {_toml(value)}")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _portable(value: Any, folders: dict[str, str], where: str) -> Any:
    if isinstance(value, str):
        if "${input:" in value:
            raise ConfigError(
                f"{where}: {value!r} uses a VS Code input, which only VS Code can prompt for; "
                "put the value in an environment variable, write ${env:NAME}, then adopt",
                code=codes.CONFIG_INPUT_VARIABLE,
            )
        value = _FOLDER_VARS.sub(lambda m: folders.get(m.group(1), m.group(0)), value)
        return _ENV_VAR.sub(r"${\1}", value)
    if isinstance(value, list):
        return [_portable(v, folders, where) for v in value]
    if isinstance(value, dict):
        return {k: _portable(v, folders, where) for k, v in value.items()}
    return value


def _anchored(path: str, folder: Path) -> str:
    """A relative ``envFile``, made absolute: it was relative to the client file's folder."""
    if path.startswith(("$", "~")) or Path(path).is_absolute():
        return path
    return str(folder / path)


def _toml(value: Any) -> str:
    """A TOML value (JSON's string escapes are valid TOML basic strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    raise ConfigError(f"cannot write {value!r} as TOML", code=codes.ADOPT_BAD_ENTRY)


def _check_loads(text: str, config_path: Path, moving: dict[str, Any]) -> None:
    """Refuse before writing anything when the new config would not load."""
    import tomllib

    from cartograph.config.loader import build_config

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{config_path}: {exc}", code=codes.CONFIG_TOML) from None
    names = set(moving)
    taken = names & set(raw.get("servers", {}))
    if taken:
        raise ConfigError(
            f"{config_path} already has servers named {', '.join(sorted(taken))}; rename one "
            "(in the client file or the config) and adopt again",
            code=codes.ADOPT_DUPLICATE_SERVER,
        )
    build_config(raw, source=config_path.resolve(), environ=_lenient_environ(text))


def _lenient_environ(text: str) -> dict[str, str]:
    """Every ``${VAR}`` set to a placeholder: adoption checks shape, not today's environment."""
    import os

    names = re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", text)
    return {**{n: "placeholder" for n in names}, **os.environ}
