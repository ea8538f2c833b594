"""Raw publisher text as index entries: a *measurement baseline only*.

The evaluation ranks the same tools over the publisher's own descriptions to
show what operator attestation costs or gains. These entries never come from
verified cards and must never be served; only :mod:`cartograph.eval` uses them.
"""

from __future__ import annotations

from typing import Any

from cartograph.catalog.model import Catalog
from cartograph.index.entries import IndexEntry, without_example_values
from cartograph.names import split_identifier


def raw_entries(catalog: Catalog) -> list[IndexEntry]:
    """One entry per catalog tool, from publisher text as served (sorted like cards)."""
    entries: list[IndexEntry] = []
    for server in sorted(catalog.servers, key=lambda s: s.name):
        server_text = f"{split_identifier(server.name)} {server.description}".strip()
        for tool in sorted(server.tools, key=lambda t: t.name):
            entries.append(
                IndexEntry(
                    server=server.name,
                    tool=tool.name,
                    name=split_identifier(tool.name),
                    description=tool.description,
                    arguments=without_example_values(schema_text(tool.input_schema)),
                    server_text=server_text,
                    server_title=split_identifier(server.name),
                )
            )
    return entries


def schema_text(schema: dict[str, Any]) -> str:
    """Parameter names and descriptions, the way a publisher's schema states them."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    parts: list[str] = []
    for name, spec in properties.items():
        parts.append(split_identifier(str(name)))
        if isinstance(spec, dict) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return " ".join(parts)
