"""Configs that point at our scriptable upstream, for gateway and server tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cartograph.config.model import (
    Config,
    GatewayConfig,
    IndexConfig,
    LearningConfig,
    ServerConfig,
)

SCRIPTABLE = Path(__file__).parent / "scriptable.py"


def scriptable(name: str, *args: str, **options: Any) -> ServerConfig:
    """One scriptable upstream as a stdio server config (handshake-era by default)."""
    options.setdefault("call_timeout", 10.0)
    options.setdefault("connect_timeout", 20.0)
    options.setdefault("protocol", "legacy")
    return ServerConfig(name=name, command=sys.executable, args=(str(SCRIPTABLE), *args), **options)


def config_for(
    state_dir: Path, *servers: ServerConfig, learning: bool = False, **gateway: Any
) -> Config:
    """``learning``: turn learning from use on (it is off by default)."""
    return Config(
        state_dir=state_dir,
        servers=servers,
        index=IndexConfig(embedder="fake"),
        gateway=GatewayConfig(**gateway),
        learning=LearningConfig(enabled=learning),
    )


def toml_for(
    state_dir: Path, *servers: ServerConfig, learning: bool = False, **gateway: Any
) -> str:
    """The same, as a cartograph.toml a subprocess can load."""
    lines = [f'state_dir = "{state_dir}"', "", "[index]", 'embedder = "fake"', ""]
    lines += ["[learning]", f"enabled = {_toml(learning)}", "", "[gateway]"]
    lines += [f"{k} = {_toml(v)}" for k, v in gateway.items()]
    for server in servers:
        lines += ["", f"[servers.{server.name}]", f"command = {_toml(server.command)}"]
        lines.append(f"args = [{', '.join(_toml(a) for a in server.args)}]")
        lines.append(f"call_timeout = {server.call_timeout}")
        lines.append(f'protocol = "{server.protocol}"')
        if server.env:
            pairs = ", ".join(f"{k} = {_toml(v)}" for k, v in server.env.items())
            lines.append(f"env = {{ {pairs} }}")
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
