"""A client entry's ``envFile`` (VS Code): ``KEY=VALUE`` lines, read when the config loads.

The format is the common dotenv subset: blank lines and ``#`` comments are
skipped, ``export KEY=VALUE`` is ``KEY=VALUE``, a value in single quotes is
taken literally, one in double quotes may hold ``\\n``/``\\t``/``\\"``/``\\\\``,
and an unquoted value ends at `` #``. Nothing is expanded inside the file.
Every problem, a missing file included, is ``config_env_file`` naming the
server, the file and the line, never a value.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from cartograph import error_codes as codes
from cartograph.config._files import read_bounded
from cartograph.errors import ConfigError

MAX_ENV_FILE_BYTES: Final = 256 * 1024
_LINE: Final = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def read_env_file(path: Path, *, where: str) -> dict[str, str]:
    """The variables of ``path``; ``where`` names the server (``FILE: server 'x'``)."""
    try:
        text = read_bounded(path, MAX_ENV_FILE_BYTES, hint="named by its 'envFile'").decode()
    except (ConfigError, UnicodeDecodeError) as exc:
        reason = exc.message if isinstance(exc, ConfigError) else f"{path}: not UTF-8 text"
        raise _error(where, path, f"{reason}; create it or fix the path") from None
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        value = _value(match.group(2)) if match else None
        if match is None or value is None:
            raise _error(where, path, f"{path}, line {number}: not KEY=VALUE")
        found[match.group(1)] = value
    return found


def _value(text: str) -> str | None:
    """The value after ``=``; None when a quote is left open."""
    if text[:1] == "'":
        end = text.find("'", 1)
        return text[1:end] if end > 0 else None
    if text[:1] == '"':
        out: list[str] = []
        i = 1
        while i < len(text) and text[i] != '"':
            if text[i] == "\\" and i + 1 < len(text):
                out.append(_ESCAPES.get(text[i + 1], "\\" + text[i + 1]))
                i += 2
                continue
            out.append(text[i])
            i += 1
        return "".join(out) if i < len(text) else None
    return re.split(r"\s+#", text, maxsplit=1)[0].strip()


def _error(where: str, path: Path, reason: str) -> ConfigError:
    return ConfigError(
        f"{where}: key 'envFile': {reason}", code=codes.CONFIG_ENV_FILE, file=str(path)
    )
