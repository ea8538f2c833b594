"""A small catalog and card helpers shared by the card, index and learning tests."""

from __future__ import annotations

from cartograph.cards.bootstrap import attest_catalog
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.keys import SigningKey
from cartograph.cards.store import CardStore
from cartograph.catalog.model import Catalog, ServerDef, ToolDef


def small_catalog() -> Catalog:
    """Two servers, a few tools each, with realistic schemas."""
    files = ServerDef(
        name="files",
        description="Read and write files on the local disk.",
        tools=(
            ToolDef(
                name="read_file",
                description="Read the complete contents of a file from the file system.",
                inputSchema={
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "Path to read"}},
                    "required": ["path"],
                },
            ),
            ToolDef(
                name="writeFile",
                description="Create a new file or overwrite an existing one with new content.",
                inputSchema={
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "content": {"type": "string"},
                        "mode": {"type": "string", "enum": ["overwrite", "append"]},
                    },
                    "required": ["path", "content"],
                },
                annotations={"destructiveHint": True},
            ),
        ),
    )
    weather = ServerDef(
        name="weather",
        description="Weather forecasts and alerts.",
        tools=(
            ToolDef(
                name="get_forecast",
                description="Get the weather forecast for a location.",
                inputSchema={
                    "type": "object",
                    "properties": {
                        "latitude": {"type": "number", "minimum": -90, "maximum": 90},
                        "longitude": {"type": "number", "minimum": -180, "maximum": 180},
                        "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 3},
                    },
                    "required": ["latitude", "longitude"],
                },
            ),
        ),
    )
    return Catalog(servers=(files, weather))


def silenced(server: ServerDef) -> ServerDef:
    """The same server with every word of publisher prose removed: names and schemas only."""
    tools = []
    for tool in server.tools:
        props = tool.input_schema.get("properties") or {}
        quiet = {n: {k: v for k, v in p.items() if k != "description"} for n, p in props.items()}
        schema = {**tool.input_schema, "properties": quiet}
        tools.append(tool.model_copy(update={"description": "", "input_schema": schema}))
    return server.model_copy(update={"description": "", "tools": tuple(tools)})


def bootstrap(store: CardStore, key: SigningKey, catalog: Catalog, **kwargs: object) -> None:
    attest_catalog(catalog, store=store, key=key, generator=TemplateGenerator(), **kwargs)  # type: ignore[arg-type]


def with_description(catalog: Catalog, server: str, tool: str, text: str) -> Catalog:
    servers = []
    for s in catalog.servers:
        if s.name == server:
            tools = tuple(
                t.model_copy(update={"description": text}) if t.name == tool else t for t in s.tools
            )
            s = s.model_copy(update={"tools": tools})
        servers.append(s)
    return Catalog(servers=tuple(servers))
