"""What a card generator produces, and the protocol every generator follows.

A generator turns one upstream :class:`ServerDef` into operator text: a
:class:`ServerText` with the server's capability and one :class:`ToolText`
per tool. Signing, pins and versions are not its business (see ``attest``).
Generators are synchronous; the LLM generator runs its own bounded pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cartograph.cards.model import Capability
from cartograph.catalog.model import ServerDef

Progress = Callable[[str], None]
"""Called with a server name after each server is generated."""


@dataclass(frozen=True)
class GeneratorInfo:
    """Recorded in each card's provenance."""

    name: str
    version: str
    model: str | None = None


@dataclass(frozen=True)
class ToolText:
    """One tool's operator text; the fields map one to one onto :class:`ToolCard`'s."""

    description: str
    arguments: str
    example: dict[str, Any]
    input_schema: dict[str, Any] = field(default_factory=dict)
    when_to_use: str = ""
    synonyms: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    vouched_name: bool = False
    """Set only by an operator override (``vouch_name``), never by a generator."""


@dataclass(frozen=True)
class ServerText:
    capability: Capability
    tools: Mapping[str, ToolText]


class CardGenerator(Protocol):
    """Anything that writes operator text for servers."""

    @property
    def info(self) -> GeneratorInfo: ...

    def describe(self, server: ServerDef) -> ServerText: ...

    def describe_all(
        self, servers: Sequence[ServerDef], *, progress: Progress | None = None
    ) -> dict[str, ServerText]: ...
