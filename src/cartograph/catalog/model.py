"""Value objects for a federation's tool definitions, as served upstream."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolDef(BaseModel):
    """One upstream tool exactly as its server lists it.

    Field names follow MCP's wire names through aliases so a ``tools/list``
    entry or a ``catalog.json`` entry validates directly.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    name: str
    title: str | None = None
    description: str = ""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}, alias="inputSchema"
    )
    output_schema: dict[str, Any] | None = Field(default=None, alias="outputSchema")
    annotations: dict[str, Any] | None = None

    def definition(self) -> dict[str, Any]:
        """The full definition that a drift pin covers (wire names, no Nones)."""
        body: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.output_schema is not None:
            body["outputSchema"] = self.output_schema
        if self.annotations is not None:
            body["annotations"] = self.annotations
        if self.title is not None:
            body["title"] = self.title
        return body


class ServerDef(BaseModel):
    """One upstream server and its tools.

    ``description`` is the publisher's server-level text (MCP ``instructions``
    or a registry summary): a hint for card generators, never ranked as is.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    name: str
    description: str = ""
    tools: tuple[ToolDef, ...] = ()
    transport: str | None = None
    endpoint: str | None = None
    publisher: str | None = None

    def tool(self, name: str) -> ToolDef | None:
        return next((t for t in self.tools if t.name == name), None)


class Catalog(BaseModel):
    """A whole federation: every server and its tools."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    servers: tuple[ServerDef, ...] = ()

    def server(self, name: str) -> ServerDef | None:
        return next((s for s in self.servers if s.name == name), None)

    @property
    def tool_count(self) -> int:
        return sum(len(s.tools) for s in self.servers)
