"""`cartograph serve` over stdio as a real subprocess: its command line and a config for it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters

from tests.helpers.support import scriptable, toml_for

SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")


def write_config(tmp_path: Path, **gateway: Any) -> Path:
    path = tmp_path / "cartograph.toml"
    servers = (scriptable("calc"), scriptable("stuck", call_timeout=30.0))
    path.write_text(toml_for(tmp_path / "state", *servers, **gateway))
    return path


def serve_params(config: Path, *extra: str) -> StdioServerParameters:
    # The whole environment, PYTHONPATH included: the SDK's default passes only a few
    # variables, so the child would import whichever cartograph is installed, not this one.
    return StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(config), *extra],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )


def text(result: object) -> str:
    return "".join(getattr(b, "text", "") for b in getattr(result, "content", []))
