"""A stdio server's stderr, kept for the session's life so a failure can quote its tail.

The server writes into an unnamed temporary file (the SDK's ``errlog``); when
a session fails, the last :data:`STDERR_TAIL_BYTES` go into the error message,
with configured secret values redacted (P-LOG-1).
"""

from __future__ import annotations

import contextlib
import tempfile
import weakref
from typing import Final, TextIO

from cartograph.config.model import ServerConfig

STDERR_TAIL_BYTES: Final = 2048


class StderrLog:
    """One stdio server's stderr file: open at session start, closed in ``aclose``.

    A session dropped without ``aclose`` closes the file when it is collected
    (else the file's own finaliser raises a ResourceWarning in whatever runs next).
    """

    def __init__(self, cfg: ServerConfig) -> None:
        self._cfg = cfg
        self.handle: TextIO = tempfile.TemporaryFile(  # noqa: SIM115 - open for the session's life
            mode="w+", encoding="utf-8", errors="replace"
        )
        weakref.finalize(self, _close_quietly, self.handle)

    def tail(self) -> str:
        """The last bytes the server wrote, redacted; empty once closed or unreadable."""
        handle = self.handle
        if handle.closed:
            return ""
        try:
            handle.flush()
            end = handle.seek(0, 2)
            handle.seek(max(0, end - STDERR_TAIL_BYTES))
            tail = handle.read()
            handle.seek(end)
        except (OSError, ValueError):
            return ""
        return redact(tail.strip(), self._cfg)

    def close(self) -> None:
        _close_quietly(self.handle)


def redact(text: str, cfg: ServerConfig) -> str:
    """Configured secrets never reach a stderr tail (P-LOG-1; which: ``config/secrets.py``)."""
    for value in cfg.secret_values():
        if len(value) >= 4:
            text = text.replace(value, "***")
    return text


def _close_quietly(handle: TextIO) -> None:
    with contextlib.suppress(OSError):
        handle.close()


__all__ = ["STDERR_TAIL_BYTES", "StderrLog", "redact"]
