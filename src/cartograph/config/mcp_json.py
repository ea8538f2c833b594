"""Import the standard ``mcpServers`` JSON that MCP clients write.

Claude Desktop, Cursor and Claude Code write ``{"mcpServers": {name: {...}}}``;
VS Code writes ``{"servers": {...}}``. Each entry is ``command``/``args``/
``env``/``cwd`` for stdio or ``url``/``type``/``headers`` for streamable HTTP
and SSE, plus ``disabled``. This module turns one entry into Cartograph's
native server keys; the loader validates the result like any other server.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from cartograph.config._files import read_bounded
from cartograph.errors import ConfigError

MAX_MCP_JSON_BYTES: Final = 1024 * 1024

# Keys that carry meaning for Cartograph.
_MAPPED: Final = frozenset(
    {"command", "args", "env", "cwd", "url", "type", "transportType", "headers", "disabled"}
)
# Client-specific keys with no meaning for a proxy (approval lists, UI hints): accepted, ignored.
_IGNORED: Final = frozenset(
    {"autoApprove", "alwaysAllow", "disabledTools", "timeout", "description", "gallery", "version"}
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
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ConfigError(
            f"{path}: not valid JSON ({exc})", code="config_mcp_json", file=str(path)
        ) from None
    except _DuplicateKey as exc:
        raise ConfigError(
            f"{path}: key {exc.key!r} appears twice in one object; JSON readers disagree on "
            "which one wins, so remove one.",
            code="config_duplicate_key",
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
            f"{where}: expected a JSON object with 'mcpServers'", code="config_mcp_json"
        )
    if "mcpServers" in data and "servers" in data:
        raise ConfigError(
            f"{where}: both 'mcpServers' and 'servers' are present; Cartograph would use one "
            "and drop the other's servers, so move them all under one key.",
            code="config_mcp_json_ambiguous",
        )
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, dict):
        raise ConfigError(
            f"{where}: no 'mcpServers' (or VS Code 'servers') object found",
            code="config_mcp_json",
        )
    return servers


def to_native(entry: Any, *, where: str) -> dict[str, Any]:
    """Translate one standard entry into Cartograph's server keys."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: a server entry must be an object", code="config_invalid")
    for key in entry:
        if key not in _MAPPED and key not in _IGNORED:
            raise ConfigError(
                f"{where}: key {key!r}: unknown key in an mcpServers entry",
                code="config_unknown_key",
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
                code="config_invalid",
                key="type",
            )
        native["transport"] = _TYPES[kind]
    if "disabled" in entry:
        disabled = entry["disabled"]
        if not isinstance(disabled, bool):
            raise ConfigError(
                f"{where}: key 'disabled': must be true or false",
                code="config_invalid",
                key="disabled",
            )
        native["enabled"] = not disabled
    return native
