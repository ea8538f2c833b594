"""Offline checks of client entries against what each client accepts (``cartograph doctor``).

An entry the client would refuse, or start and fail, is found here before
the user restarts the client: the shape (stdio command or HTTP URL, and
whether that client takes HTTP at all), a command that does not exist or is
not executable, a URL that is not absolute http(s), header names that are
not HTTP tokens, and environment references in a syntax the client does not
expand (Cursor and VS Code expand ``${env:VAR}``, Claude Code ``${VAR}``).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from cartograph.cli.client_files import dialect

_TOKEN: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_PLAIN_REF: Final = re.compile(r"\$\{(?!env:|input:|workspaceFolder|userHome|pathSeparator|/)")
_ENV_REF: Final = re.compile(r"\$\{env:")


def entry_problems(client: str, entry: Any, *, cwd: Path | None = None) -> list[str]:
    """What is wrong with one entry for ``client``; empty when it would start."""
    if not isinstance(entry, dict):
        return ["an entry must be a JSON object"]
    kind = dialect(client)
    has_command, has_url = "command" in entry, "url" in entry
    if has_command and has_url:
        return ["both 'command' and 'url': set one (stdio) or the other (HTTP)"]
    if has_url:
        if kind.http_type is None:
            return [
                f"{client}'s config file runs only stdio commands, not URLs; "
                "`cartograph connect` writes a `cartograph bridge` entry instead"
            ]
        return _url_problems(client, entry)
    if not has_command:
        return ["neither 'command' nor 'url'"]
    return _stdio_problems(client, entry, cwd)


def _stdio_problems(client: str, entry: dict[str, Any], cwd: Path | None) -> list[str]:
    problems = []
    kind = entry.get("type")
    if kind is not None and kind != "stdio":
        problems.append(f"'type' is {kind!r} but the entry has a 'command'")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        problems.append("'args' must be a list of strings")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        problems.append("'env' must be an object of strings")
    problems += _command_problems(entry.get("command"), cwd)
    return problems + _reference_problems(client, [*_strings(args), *_strings(env)])


def _command_problems(command: Any, cwd: Path | None) -> list[str]:
    if not isinstance(command, str) or not command.strip():
        return ["'command' must be a non-empty string"]
    if "${" in command:
        return []  # expanded by the client at start: cannot be checked offline
    if os.sep in command or (os.altsep and os.altsep in command):
        path = Path(os.path.expanduser(command))
        path = path if path.is_absolute() or cwd is None else cwd / path
        if not path.exists():
            return [f"command {command!r} does not exist"]
        if not path.is_file() or not os.access(path, os.X_OK):
            return [f"command {command!r} is not an executable file"]
        return []
    if shutil.which(command) is None:
        return [f"command {command!r} is not on PATH"]
    return []


def _url_problems(client: str, entry: dict[str, Any]) -> list[str]:
    problems = []
    kind = dialect(client)
    declared = entry.get("type")
    allowed = {t for t in (kind.http_type, "sse") if t}
    if client == "vscode" and declared is None:
        problems.append("VS Code needs 'type': 'http' (or 'sse') on a URL entry")
    elif declared is not None and allowed and declared not in allowed:
        problems.append(f"'type' {declared!r} is not one {client} takes ({', '.join(allowed)})")
    url = entry.get("url")
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        problems.append("'url' must be an absolute http:// or https:// URL")
    headers = entry.get("headers", {})
    if headers and not kind.headers:
        problems.append(f"{client} does not send 'headers' from its config file")
    if not isinstance(headers, dict):
        return [*problems, "'headers' must be an object"]
    for name, value in headers.items():
        if not _TOKEN.match(name):
            problems.append(f"header name {name!r} is not a valid HTTP header name")
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            problems.append(f"header {name!r}: the value must be one line of text")
    return problems + _reference_problems(client, _strings(headers))


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str)]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _reference_problems(client: str, values: list[str]) -> list[str]:
    syntax = dialect(client).env_syntax
    for value in values:
        if syntax == "env" and _PLAIN_REF.search(value):
            return [f"{value!r}: {client} expands ${{env:VAR}}, not ${{VAR}}"]
        if syntax == "plain" and _ENV_REF.search(value):
            return [f"{value!r}: {client} expands ${{VAR}}, not ${{env:VAR}}"]
        if syntax == "none" and ("${" in value):
            return [f"{value!r}: {client} does not expand variables in its config file"]
    return []
