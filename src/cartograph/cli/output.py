"""Printing: rich tables for people, JSON for machines, errors to stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cartograph.errors import CartographError

PIPE_WIDTH: Final = 10_000
"""Console width when the stream is not a terminal: a script reads whole cells, never ``serv…``."""


def _console(*, to_stderr: bool) -> Console:
    """A console that truncates nothing when redirected (rich would assume 80 columns)."""
    stream = sys.stderr if to_stderr else sys.stdout
    width = None if _is_terminal(stream) else PIPE_WIDTH
    return Console(stderr=to_stderr, soft_wrap=True, width=width)


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):  # a closed stream
        return False


stdout = _console(to_stderr=False)
stderr = _console(to_stderr=True)


@contextmanager
def working(message: str) -> Iterator[None]:
    """A spinner on stderr for work that can take over a second (terminal only: a log or a
    pipe gets no control codes)."""
    if not stderr.is_terminal:
        yield
        return
    with stderr.status(message):
        yield


def print_json(data: Any) -> None:
    """JSON on stdout, nothing else, so it pipes cleanly into jq."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table; on a terminal rich wraps long cells, redirected nothing is cut."""
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        # Text, not str: cells hold upstream text, and rich would eat "[...]" as markup.
        table.add_row(*(Text("" if cell is None else str(cell)) for cell in row))
    stdout.print(table)


def print_error(exc: CartographError) -> None:
    # Messages quote config sections ("[servers] in FILE"): escape them, or rich drops them.
    message = escape(exc.message)
    stderr.print(f"[bold red]error[/] [dim]({exc.code})[/]: {message}", highlight=False)
