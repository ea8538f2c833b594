"""Every error code Cartograph emits, in one registry, each with a one-line meaning.

A code is the stable part of an error: tests assert it, agents branch on it and
operators search the docs for it, while the message around it may change. So
codes live here as named constants and raise sites use the constant
(``code=codes.CONFIG_MISSING``), never a string literal; a typo then fails at
import or type-check time instead of silently minting a new, undocumented code.

:data:`REGISTRY` maps each code to its meaning. ``docs/errors.md`` (and the
area tables it links to) document exactly these codes, and
``tests/test_error_codes.py`` checks the two against each other both ways. A
constant's name is its code in upper case.

The codes are kept by area, one private module each, in docs/errors.md's order:
``_hierarchy`` (the error classes' defaults), ``_config``, ``_cards`` (catalog
snapshots and cards), ``_serving`` (retrieval, upstreams, the MCP surface and
gateway, HTTP), ``_features`` (stubs, Rift, the demo, learning, storage, telemetry)
and ``_codemode``; ``_registry`` holds the table they register in. This face
re-exports every constant, so ``codes.CONFIG_MISSING`` reads as it always has.

Where a code reaches users (CLI, MCP tool error, JSON-RPC refusal, audit): docs/errors.md.
"""

from __future__ import annotations

# isort: off
# The areas in docs/errors.md's order, which is the order REGISTRY lists them in.
from cartograph.error_codes._hierarchy import *  # noqa: F403
from cartograph.error_codes._config import *  # noqa: F403
from cartograph.error_codes._cards import *  # noqa: F403
from cartograph.error_codes._serving import *  # noqa: F403
from cartograph.error_codes._features import *  # noqa: F403
from cartograph.error_codes._codemode import *  # noqa: F403

# isort: on
from cartograph.error_codes._registry import REGISTRY as REGISTRY
