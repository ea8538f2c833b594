"""Log lines on stderr for every command: ``cartograph [--debug] [--log-format json] CMD``.

The options sit on the root command, so any subcommand's logs can be one JSON
object per line for a collector, and with JSON the command's closing error is
such an object too (as it is when the command itself was given ``--json``).
The choice is kept in the Click context's ``meta`` (shared by the root and the
subcommand), not in a global: an in-process run starts clean. ``serve`` keeps
its own ``--debug``/``--log-format`` (they win) and, alone, also reads
``[logging] format`` from its config when no flag names a format. Without
either option logging is left as Python sets it up.

Only the standard library is imported here; the JSON formatter (and
OpenTelemetry behind it) loads when JSON is chosen, so ``--help`` stays fast.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Final

META_KEY: Final = "cartograph.logging"
ERROR_LOGGER: Final = "cartograph.cli"


class LogFormat(StrEnum):
    """``--log-format``: lines for people, or one JSON object per line for a collector."""

    text = "text"
    json = "json"


@dataclass(frozen=True)
class LogChoice:
    """What the command line asked for; ``format`` None: not named (config or text decides)."""

    debug: bool = False
    format: LogFormat | None = None

    def over(self, outer: LogChoice) -> LogChoice:
        """This (a subcommand's own options) over ``outer`` (the root's)."""
        return LogChoice(debug=self.debug or outer.debug, format=self.format or outer.format)


def chosen(meta: dict[str, Any]) -> LogChoice:
    """The choice recorded in a Click context's ``meta`` (none: the defaults)."""
    found = meta.get(META_KEY)
    return found if isinstance(found, LogChoice) else LogChoice()


def apply(choice: LogChoice, *, fallback: str = "text") -> LogChoice:
    """Set up logging as ``choice`` says (``fallback`` when it names no format).

    Returns the choice with its format filled in, for the caller to record in ``meta``.
    """
    log_format = choice.format or LogFormat(fallback)
    setup_logging(choice.debug, log_format.value)
    return replace(choice, format=log_format)


def setup_logging(debug: bool, log_format: str = "text") -> None:
    """Everything to stderr: in stdio mode stdout belongs to JSON-RPC (P-STDIO-1).

    The level sits on the handler, not only the root logger: a library that
    sets its own logger to DEBUG (bm25s does, on import) would otherwise print
    every debug line of every index build. In ``json`` format Python warnings
    are logged too, so every stderr line parses.
    """
    from cartograph.telemetry.logs import formatter

    level = logging.DEBUG if debug else logging.WARNING
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(level)
    handler.setFormatter(formatter(log_format))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.captureWarnings(log_format == "json")


def logs_json(meta: dict[str, Any]) -> bool:
    """Whether this run's stderr is JSON objects (so its error line must be one too)."""
    return chosen(meta).format is LogFormat.json


def log_error(message: str, code: str) -> None:
    """The command's closing error as a log record (a JSON object under JSON logging)."""
    logging.getLogger(ERROR_LOGGER).error(message, extra={"code": code})


def print_error_object(message: str, code: str) -> None:
    """The closing error as the object JSON logging would write, on stderr (``--json``).

    Logging itself is left alone: ``--json`` asks for one parseable error,
    not for every log line of the run as JSON.
    """
    from cartograph.telemetry.logs import formatter

    logger = logging.getLogger(ERROR_LOGGER)
    record = logger.makeRecord(
        ERROR_LOGGER, logging.ERROR, "(cartograph)", 0, message, (), None, extra={"code": code}
    )
    sys.stderr.write(formatter("json").format(record) + "\n")
