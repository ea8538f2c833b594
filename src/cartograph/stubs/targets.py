"""Where generated stubs find `cartograph serve`: over HTTP, or a stdio child.

Resolved from the environment so generated code never embeds a machine's
paths or tokens:

- ``CARTOGRAPH_STUBS_URL``: the streamable-HTTP endpoint of a running
  ``cartograph serve --http`` (e.g. ``http://127.0.0.1:8765/mcp/default``),
  with ``CARTOGRAPH_STUBS_TOKEN`` as its bearer token when auth is on;
- otherwise ``CARTOGRAPH_STUBS_COMMAND`` (a shell-quoted command line) is
  launched over stdio, defaulting to ``cartograph serve`` run by this very
  interpreter (which reads ``CARTOGRAPH_CONFIG`` as usual).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cartograph import error_codes as codes
from cartograph.errors import ConfigError

URL_ENV: Final = "CARTOGRAPH_STUBS_URL"
TOKEN_ENV: Final = "CARTOGRAPH_STUBS_TOKEN"  # noqa: S105 (a variable name, not a secret)
COMMAND_ENV: Final = "CARTOGRAPH_STUBS_COMMAND"
CALL_TOOL_ENV: Final = "CARTOGRAPH_STUBS_CALL_TOOL"
TIMEOUT_ENV: Final = "CARTOGRAPH_STUBS_TIMEOUT"
DEFAULT_CALL_TOOL: Final = "call"
DEFAULT_TIMEOUT: Final = 120.0


@dataclass(frozen=True)
class HttpTarget:
    url: str
    token: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        return self.url


@dataclass(frozen=True)
class StdioTarget:
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: Path | None = None
    inherit_env: bool = True

    def __post_init__(self) -> None:
        if not self.command:
            raise ConfigError(
                "the stdio command for `cartograph serve` is empty", code=codes.STUBS_TARGET
            )

    def describe(self) -> str:
        return shlex.join(self.command)


Target = HttpTarget | StdioTarget


def default_serve_command() -> tuple[str, ...]:
    """`cartograph serve` run by the current interpreter, so the same install answers."""
    return (sys.executable, "-m", "cartograph.cli.main", "serve")


def target_from_env(environ: Mapping[str, str] | None = None) -> Target:
    env = os.environ if environ is None else environ
    url = env.get(URL_ENV, "").strip()
    if url:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{URL_ENV}={url!r} is not an http(s) URL", code=codes.STUBS_TARGET)
        return HttpTarget(url, env.get(TOKEN_ENV) or None)
    command = env.get(COMMAND_ENV, "").strip()
    return StdioTarget(tuple(shlex.split(command)) if command else default_serve_command())


def call_tool_from_env(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get(CALL_TOOL_ENV, "").strip() or DEFAULT_CALL_TOOL


def timeout_from_env(environ: Mapping[str, str] | None = None) -> float:
    env = os.environ if environ is None else environ
    raw = env.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(
            f"{TIMEOUT_ENV}={raw!r} must be a positive number of seconds", code=codes.STUBS_TARGET
        )
    return value
