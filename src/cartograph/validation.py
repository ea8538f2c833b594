"""One reading of a pydantic ``ValidationError`` (where, which code, what), and the one strict base.

Config files, catalog snapshots, cards, overrides and command-line options are all
validated by pydantic models, and each turns the first problem into a Cartograph error
with the file (or option) it came from. They share this reading so the key path, the
message and the rule that the offending *value* is never echoed (it may be a secret)
are the same everywhere. Each caller picks its own error class and code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError

TOP_LEVEL: Final = "(top level)"
"""The key of a problem with the whole object (a model validator's)."""

_PREFIXES: Final = ("Value error, ", "Assertion failed, ")


@dataclass(frozen=True, slots=True)
class Problem:
    """The first thing wrong with a validated value."""

    key: str
    """Dotted path of the offending key (``servers.0.url``), or :data:`TOP_LEVEL`."""
    loc: tuple[int | str, ...]
    """The same path as pydantic's parts (empty for a whole-object problem)."""
    kind: str
    """pydantic's error type (``missing``, ``extra_forbidden``, ``greater_than``, …)."""
    message: str
    """pydantic's message, without the value and without its ``Value error,`` prefix."""

    def line(self) -> str:
        """``key 'a.b': message``, or just the message for a whole-object problem."""
        return self.message if self.key == TOP_LEVEL else f"key {self.key!r}: {self.message}"


def first_problem(exc: ValidationError) -> Problem:
    """The first error of ``exc`` (pydantic lists them in field order)."""
    first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
    key = ".".join(str(part) for part in first["loc"]) or TOP_LEVEL
    message = first["msg"]
    for prefix in _PREFIXES:
        message = message.removeprefix(prefix)
    return Problem(key, tuple(first["loc"]), first["type"], message)


class StrictModel(BaseModel):
    """The one base of Cartograph's value models: frozen, and no key it does not know.

    Cards, rift reports and discover results are made once and then only read; a
    stray key in a file is a mistake to refuse, never data to carry along.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


__all__ = ["TOP_LEVEL", "Problem", "StrictModel", "first_problem"]
