"""What a refusal, a log line or an audit record may repeat of text a caller chose.

A client names resources, prompts, tools and servers; a refusal says which name it
refused, and the audit record says which was asked for. Repeated as sent, a 200 KB
URI comes back inside its own error and is written as a 200 KB audit line (issue 24).
:func:`echoed` keeps a name whole up to :data:`MAX_ECHO` characters; a longer one
keeps its start and says how long it was, with the SHA-256 of the whole, so that two
long names stay two records and an operator can match one against the value sent.

This is a leaf module: it imports nothing from Cartograph, so every layer may use it.
"""

from __future__ import annotations

import hashlib
from typing import Final

MAX_ECHO: Final = 512
"""The most characters of one caller-chosen value a message or record repeats."""

MAX_MESSAGE: Final = 8192
"""The most characters of one error message sent back to a client: a backstop for text
Cartograph did not compose itself (an upstream's error may quote the whole request)."""


def echoed(value: str, limit: int = MAX_ECHO) -> str:
    """``value`` when it has at most ``limit`` characters, else its start and its digest.

    ``echoed("x" * 200_000)`` is ``"xx…x…(200000 chars, sha256 …)"``: as much of the
    start as fits, then the length and the hex SHA-256 of the whole value (its UTF-8,
    lone surrogates kept). The result has at most ``limit`` characters, so echoing an
    echo changes nothing (a record read back and written again keeps its name).
    """
    if len(value) <= limit:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    tail = f"…({len(value)} chars, sha256 {digest})"
    return value[: max(0, limit - len(tail))] + tail


def echoed_or_none(value: str | None, limit: int = MAX_ECHO) -> str | None:
    """:func:`echoed` of a value that may be absent."""
    return None if value is None else echoed(value, limit)


__all__ = ["MAX_ECHO", "MAX_MESSAGE", "echoed", "echoed_or_none"]
