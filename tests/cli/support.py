"""Reading what the CLI reports on failure: the exit code and the one ``error (CODE): …`` line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from typer.testing import Result

ERROR_LINE: Final = re.compile(r"^error \(([a-z][a-z0-9_]*)\): (\S.*)$")


@dataclass(frozen=True)
class CliError:
    """A failed command as a shell sees it."""

    exit_code: int
    code: str
    message: str


def cli_error(result: Result) -> CliError | None:
    """The error on stderr's last line, when the command ended with one."""
    lines = result.stderr.strip().splitlines()
    match = ERROR_LINE.match(lines[-1]) if lines else None
    if match is None:
        return None
    return CliError(result.exit_code, match.group(1), match.group(2))


def error_code(result: Result) -> str | None:
    """The code on the CLI's error line, when stderr's last line is one."""
    found = cli_error(result)
    return found.code if found else None
