"""Variables in config values, in every syntax MCP client files use.

``${VAR}`` must be set; ``${VAR:-default}`` falls back when unset or empty
(Claude Code, and Cartograph's own TOML); ``${env:VAR}`` is the same as
``${VAR}`` (Cursor, VS Code); ``${workspaceFolder}``,
``${workspaceFolderBasename}``, ``${userHome}``, ``${pathSeparator}`` and
``${/}`` are the folders and separator Cursor and VS Code predefine;
``${input:id}`` (VS Code prompts the user for it) is refused with an error
naming the input, since a proxy has no one to ask; ``$$`` is a literal
dollar sign. Any other ``${…}`` is refused rather than passed on literally
(an upstream once received ``Authorization: Bearer ${env:REMOTE_TOKEN}``).
Expansion happens once, at load, so secrets stay in the environment rather
than in the file (and never in error text: messages name the variable, not
its value).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cartograph import error_codes as codes
from cartograph.errors import ConfigError

_NAME: Final = r"[A-Za-z_][A-Za-z0-9_]*"
_PATTERN: Final = re.compile(
    r"\$\$"
    rf"|\$\{{env:(?P<env>{_NAME})\}}"
    r"|\$\{input:(?P<input>[^}]*)\}"
    rf"|\$\{{(?P<name>{_NAME})(?::-(?P<default>[^}}]*))?\}}"
    r"|\$\{(?P<sep>/)\}"
    r"|\$\{(?P<other>[^}]*)\}"
)


@dataclass(frozen=True)
class Folders:
    """What ``${workspaceFolder}`` and ``${userHome}`` mean for one file."""

    workspace: Path | None = None
    home: Path = field(default_factory=Path.home)

    @classmethod
    def for_file(cls, path: Path) -> Folders:
        """A project file in ``.vscode/`` or ``.cursor/`` belongs to the folder above it."""
        folder = path.parent
        if folder.name in (".vscode", ".cursor"):
            folder = folder.parent
        return cls(workspace=folder)

    def predefined(self) -> dict[str, str]:
        found = {"userHome": str(self.home), "pathSeparator": os.sep}
        if self.workspace is not None:
            found["workspaceFolder"] = str(self.workspace)
            found["workspaceFolderBasename"] = self.workspace.name
        return found


def expand(
    value: str, environ: Mapping[str, str], *, where: str, folders: Folders | None = None
) -> str:
    """Replace the variables in ``value``; ``where`` names the key for errors."""
    predefined = (folders or Folders()).predefined()

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        if match.group("sep"):
            return os.sep
        if match.group("input") is not None:
            raise _input_error(match.group("input"), where)
        if match.group("other") is not None:
            raise ConfigError(
                f"{where}: {match.group(0)!r} is not a variable Cartograph knows "
                "(use ${VAR}, ${VAR:-default}, ${env:VAR}, ${workspaceFolder} or ${userHome}; "
                "$$ is a literal $)",
                code=codes.CONFIG_UNKNOWN_VARIABLE,
                variable=match.group("other"),
            )
        name = match.group("env") or match.group("name")
        if match.group("name") in predefined:
            return predefined[name]
        env_form = match.group("env") is not None
        return _from_env(name, match.group("default"), environ, where, env_form=env_form)

    return _PATTERN.sub(replace, value)


def _from_env(
    name: str, default: str | None, environ: Mapping[str, str], where: str, *, env_form: bool
) -> str:
    found = environ.get(name)
    if found:
        return found
    if default is not None:
        return default
    # The hint in the syntax the file uses: Cursor's and VS Code's ${env:NAME} has no default.
    hint = (
        f"set it where Cartograph runs; ${{env:{name}}} has no default form in Cursor or VS Code"
        if env_form
        else f"set it, or write ${{{name}:-default}}"
    )
    raise ConfigError(
        f"{where}: environment variable {name!r} is not set ({hint})",
        code=codes.CONFIG_ENV_VAR,
        variable=name,
    )


def _input_error(input_id: str, where: str) -> ConfigError:
    return ConfigError(
        f"{where}: ${{input:{input_id}}} is a VS Code input, which VS Code asks the user for; "
        f"Cartograph cannot prompt, so put the value of input {input_id!r} in an environment "
        "variable and write ${env:NAME} instead",
        code=codes.CONFIG_INPUT_VARIABLE,
        input=input_id,
    )
