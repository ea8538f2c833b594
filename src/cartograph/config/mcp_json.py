"""Import the standard ``mcpServers`` JSON that MCP clients write.

Claude Desktop, Cursor and Claude Code write ``{"mcpServers": {name: {...}}}``;
VS Code writes ``{"servers": {...}}``. Each entry is ``command``/``args``/
``env``/``cwd`` for stdio or ``url``/``type``/``headers`` for streamable HTTP
and SSE, plus ``disabled`` and ``disabledTools`` (which become deny rules:
a tool the client had disabled is neither served nor callable) and VS Code's
``envFile`` (the loader reads it into ``env``). Files are
read as JSONC (VS Code's and Cursor's files may hold comments and trailing
commas). This module turns one entry into Cartograph's native server keys;
the loader validates the result like any other server. An entry that runs
Cartograph itself is recognised (:func:`is_cartograph_entry`) so the loader
can skip it instead of starting Cartograph as its own upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any, Final
from urllib.parse import urlsplit

from cartograph import error_codes as codes
from cartograph.config import jsonc
from cartograph.config._files import read_bounded
from cartograph.errors import ConfigError

MAX_MCP_JSON_BYTES: Final = 1024 * 1024
ENV_FILE: Final = "envFile"
"""The one client key kept as is in a translated entry: the loader reads the file it names."""

# Keys that carry meaning for Cartograph.
_MAPPED: Final = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "type",
        "transportType",
        "headers",
        "disabled",
        "disabledTools",
        "envFile",
    }
)
# Client-specific keys with no meaning for a proxy (approval lists, UI hints): accepted, ignored.
_IGNORED: Final = frozenset(
    {"autoApprove", "alwaysAllow", "timeout", "description", "gallery", "version"}
)
_TYPES: Final[Mapping[str, str]] = {
    "stdio": "stdio",
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamableHttp": "streamable-http",
    "sse": "sse",
}


def read_mcp_json(path: Path, *, imported_by: Path) -> dict[str, Any]:
    """The server mapping of one JSON file (``mcpServers`` or VS Code's ``servers``)."""
    raw = read_bounded(path, MAX_MCP_JSON_BYTES, hint=f"named by 'mcp_json' in {imported_by}")
    try:
        text = raw.decode("utf-8")
        data = jsonc.loads(
            text, where=str(path), code=codes.CONFIG_MCP_JSON, object_pairs_hook=_unique_keys
        )
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text ({exc.reason})", code=codes.CONFIG_MCP_JSON, file=str(path)
        ) from None
    except _DuplicateKey as exc:
        raise ConfigError(
            f"{path}: key {exc.key!r} appears twice in one object; JSON readers disagree on "
            "which one wins, so remove one.",
            code=codes.CONFIG_DUPLICATE_KEY,
            file=str(path),
            key=exc.key,
        ) from None
    return server_mapping(data, where=str(path))


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a key written twice (silently last-wins otherwise)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def server_mapping(data: Any, *, where: str) -> dict[str, Any]:
    """Pick the server table out of a parsed JSON document.

    A document holding both ``mcpServers`` and VS Code's ``servers`` is refused:
    taking one would silently drop the other's servers.
    """
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: expected a JSON object with 'mcpServers'", code=codes.CONFIG_MCP_JSON
        )
    if "mcpServers" in data and "servers" in data:
        raise ConfigError(
            f"{where}: both 'mcpServers' and 'servers' are present; Cartograph would use one "
            "and drop the other's servers, so move them all under one key.",
            code=codes.CONFIG_MCP_JSON_AMBIGUOUS,
        )
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, dict):
        raise ConfigError(
            f"{where}: no 'mcpServers' (or VS Code 'servers') object found",
            code=codes.CONFIG_MCP_JSON,
        )
    return servers


def to_native(entry: Any, *, where: str) -> dict[str, Any]:
    """Translate one standard entry into Cartograph's server keys."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: a server entry must be an object", code=codes.CONFIG_INVALID)
    for key in entry:
        if key not in _MAPPED and key not in _IGNORED:
            raise ConfigError(
                f"{where}: key {key!r}: unknown key in an mcpServers entry",
                code=codes.CONFIG_UNKNOWN_KEY,
                key=str(key),
            )
    native = {
        k: entry[k] for k in ("command", "args", "env", "cwd", "url", "headers") if k in entry
    }
    kind = entry.get("type", entry.get("transportType"))
    if kind is not None:
        if not isinstance(kind, str) or kind not in _TYPES:
            raise ConfigError(
                f"{where}: key 'type': {kind!r} is not one of {sorted(_TYPES)}",
                code=codes.CONFIG_INVALID,
                key="type",
            )
        native["transport"] = _TYPES[kind]
    if "disabled" in entry:
        disabled = entry["disabled"]
        if not isinstance(disabled, bool):
            raise ConfigError(
                f"{where}: key 'disabled': must be true or false",
                code=codes.CONFIG_INVALID,
                key="disabled",
            )
        native["enabled"] = not disabled
    if "disabledTools" in entry:
        native["disabled_tools"] = _tool_list(entry["disabledTools"], where=where)
    if "envFile" in entry:
        if not isinstance(entry["envFile"], str) or not entry["envFile"]:
            raise ConfigError(
                f"{where}: key 'envFile': must be a file path",
                code=codes.CONFIG_INVALID,
                key="envFile",
            )
        native[ENV_FILE] = entry["envFile"]  # read by the loader, after expansion
    return native


def _tool_list(value: Any, *, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(
            f"{where}: key 'disabledTools': must be a list of tool names",
            code=codes.CONFIG_INVALID,
            key="disabledTools",
        )
    return list(value)


def is_cartograph_entry(name: str, entry: Any) -> bool:
    """Does this client entry run Cartograph (stdio, bridge, or one of its HTTP endpoints)?

    Importing it would make Cartograph start itself as an upstream.
    """
    if not isinstance(entry, dict):
        return False
    command = entry.get("command")
    raw_args = entry.get("args")
    args = [a for a in raw_args if isinstance(a, str)] if isinstance(raw_args, list) else []
    if isinstance(command, str):
        program = PurePath(command).name.removesuffix(".exe")
        if program == "cartograph" or any(a.startswith("cartograph.cli") for a in args):
            return True
        if program in ("uvx", "pipx") and any(a.split("@")[0] == "cartograph" for a in args[:3]):
            return True
        return "-m" in args and args[args.index("-m") + 1 :][:1] == ["cartograph"]
    url = entry.get("url")
    ours = name == "cartograph" or name.startswith("cartograph-")
    return ours and isinstance(url, str) and urlsplit(url).path.startswith("/mcp/")
