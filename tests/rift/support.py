"""Small catalogs, cards and explicit embeddings the rift tests build their cases from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.generators.base import ServerText, ToolText
from cartograph.cards.model import Capability
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.index.embedders.base import Vectors
from cartograph.rift.analysis import EmbedFn

CITY = {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}}


def schema(**props: str) -> dict[str, Any]:
    """An object schema whose properties are strings described by the given text."""
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": d} for name, d in props.items()},
        "required": list(props),
    }


def catalog_of(servers: Mapping[str, Sequence[tuple[str, str, dict[str, Any]]]]) -> Catalog:
    """{server: [(tool, publisher description, input schema)]} as a Catalog."""
    return Catalog(
        servers=tuple(
            ServerDef(
                name=name,
                description=f"{name} server",
                tools=tuple(ToolDef(name=t, description=d, inputSchema=s) for t, d, s in tools),
            )
            for name, tools in servers.items()
        )
    )


def cards_with_text(
    catalog: Catalog, descriptions: Mapping[str, Mapping[str, str]]
) -> VerifiedCards:
    """Verified cards whose operator text is exactly ``descriptions[server][tool]``."""
    texts = {
        server.name: ServerText(
            capability=Capability(summary=f"{server.name} tools"),
            tools={
                t.name: ToolText(
                    description=descriptions[server.name][t.name],
                    arguments="",
                    example={},
                    input_schema=dict(t.input_schema),
                )
                for t in server.tools
            },
        )
        for server in catalog.servers
    }
    return attest_with_unsafe_throwaway_key(catalog, texts=texts)


def explicit_embed(table: Mapping[str, Sequence[float]]) -> EmbedFn:
    """An embedder that maps each known text to a given vector (L2-normalised)."""

    def embed(texts: Sequence[str]) -> Vectors:
        rows = np.asarray([table[t] for t in texts], dtype=np.float32)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        out: Vectors = (rows / norms).astype(np.float32)
        return out

    return embed


def listed_tool(
    name: str, description: str, schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema or CITY}


# Two weather tools whose names collide once separators and case are folded
# and which take the same argument: no task can say which one it wants, and
# the template writes the same words for both, so the cluster is HIGH.
CONFUSABLE = {
    "servers": [
        {
            "name": "weather",
            "description": "Weather data",
            "tools": [listed_tool("get_weather", "Get the weather for a city.")],
        },
        {
            # Same folded name on another server: legal (P-NAME-1 is per server),
            # and exactly the cross-server confusion Rift exists to flag.
            "name": "forecast",
            "description": "Forecasts and current conditions",
            "tools": [listed_tool("getWeather", "Get the weather for a city.")],
        },
        {
            "name": "git",
            "description": "Version control",
            "tools": [listed_tool("commit", "Record staged changes to the repository history.")],
        },
    ]
}
