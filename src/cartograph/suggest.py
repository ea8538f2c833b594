"""'Did you mean …?' for a mistyped name: servers, tools, catalogs, config keys.

A typo should cost one glance, not a trip to the docs: every error that
refuses an unknown name lists the close matches (or says what exists).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Final

CUTOFF: Final = 0.6
"""difflib's ratio below which a candidate is not offered (its own default)."""
MAX_SUGGESTIONS: Final = 3


def close_matches(word: str, candidates: Iterable[str]) -> list[str]:
    """The candidates closest to ``word``, best first (case-insensitive)."""
    pool = sorted(set(candidates))
    lowered = {c.lower(): c for c in pool}
    found = difflib.get_close_matches(word.lower(), list(lowered), MAX_SUGGESTIONS, CUTOFF)
    return [lowered[f] for f in found]


def did_you_mean(word: str, candidates: Iterable[str], *, what: str = "known") -> str:
    """A sentence for an error message: the close matches, else every known name, else none.

    ``what`` names the list (``"configured servers"``); an empty list says so
    instead of printing a colon followed by nothing.
    """
    pool = sorted(set(candidates))
    matches = close_matches(word, pool)
    if matches:
        return "did you mean " + " or ".join(repr(m) for m in matches) + "?"
    if not pool:
        return f"there are no {what}"
    return f"{what}: {', '.join(pool)}"
