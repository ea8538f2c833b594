"""Fixtures for card tests: small catalogs, keys, and the benchmark catalog path."""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.catalog.model import Catalog, ServerDef, ToolDef

REPO = Path(__file__).resolve().parents[2]


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


@pytest.fixture
def catalog() -> Catalog:
    return small_catalog()


def silenced(server: ServerDef) -> ServerDef:
    """The same server with every word of publisher prose removed: names and schemas only."""
    tools = []
    for tool in server.tools:
        props = tool.input_schema.get("properties") or {}
        quiet = {n: {k: v for k, v in p.items() if k != "description"} for n, p in props.items()}
        schema = {**tool.input_schema, "properties": quiet}
        tools.append(tool.model_copy(update={"description": "", "input_schema": schema}))
    return server.model_copy(update={"description": "", "tools": tuple(tools)})
