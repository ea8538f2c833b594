"""The capability card: what an operator attests about one upstream server.

C = (identity, capability, per-tool descriptions, provenance, signature), as in
the paper's §3.2. Everything except ``signature`` is the signed body. Ranking
only ever sees ``capability`` and ``tools[*].description`` text, which the
operator's generator wrote; the publisher's text is never copied in.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

CARD_FORMAT_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Identity(_Frozen):
    server: str
    transport: str = "stdio"
    endpoint: str = ""
    publisher: str | None = None


class Capability(_Frozen):
    summary: str
    guidance: str = ""
    tags: tuple[str, ...] = ()


class ToolCard(_Frozen):
    """One tool as the operator describes it, pinned to the definition it saw."""

    name: str
    description: str
    arguments: str = ""
    example: dict[str, Any] = Field(default_factory=dict)
    input_schema: dict[str, Any] = Field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    digest: str


class Provenance(_Frozen):
    generator: str
    generator_version: str
    model: str | None = None
    created_at: str
    server_digest: str
    card_version: int = Field(ge=1)


class Signature(_Frozen):
    algorithm: str = "ed25519"
    key_id: str
    value: str


class CardBody(_Frozen):
    """The signed part of a card."""

    format: int = CARD_FORMAT_VERSION
    identity: Identity
    capability: Capability
    tools: tuple[ToolCard, ...]
    provenance: Provenance

    def tool(self, name: str) -> ToolCard | None:
        return next((t for t in self.tools if t.name == name), None)


class Card(_Frozen):
    body: CardBody
    signature: Signature

    @property
    def server(self) -> str:
        return self.body.identity.server
