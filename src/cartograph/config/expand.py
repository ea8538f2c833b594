"""``${VAR}`` expansion in the config values that carry secrets or ports.

``${VAR}`` must be set; ``${VAR:-default}`` falls back when unset or empty;
``$$`` is a literal dollar sign. Expansion happens once, at load, so secrets
stay in the environment rather than in the file (and never in error text:
messages name the variable, not its value).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from cartograph.errors import ConfigError

_PATTERN: Final = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str, environ: Mapping[str, str], *, where: str) -> str:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in ``value``; ``where`` names the key for errors."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found:
            return found
        if default is not None:
            return default
        raise ConfigError(
            f"{where}: environment variable {name!r} is not set "
            f"(set it, or write ${{{name}:-default}})",
            code="config_env_var",
            variable=name,
        )

    return _PATTERN.sub(replace, value)
