"""The one table every code is registered in, in the order the area modules register them.

Each area module registers its codes at import; ``cartograph.error_codes`` imports
the areas in docs/errors.md's order, so :data:`REGISTRY` lists them in that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

_MEANINGS: dict[str, str] = {}


def _code(code: str, meaning: str) -> str:
    """Register ``code`` with its one-line meaning; a code registered twice is a bug."""
    if code in _MEANINGS:
        raise ValueError(f"error code {code!r} is registered twice")
    _MEANINGS[code] = meaning
    return code


REGISTRY: Final[Mapping[str, str]] = MappingProxyType(_MEANINGS)
"""Every code, mapped to its one-line meaning."""
