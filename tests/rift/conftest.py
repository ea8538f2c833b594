"""Fixtures for Rift: hand-built catalogs, explicit vectors, and verified cards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.generators.base import ServerText, ToolText
from cartograph.cards.model import Capability
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.embedders.base import Vectors
from cartograph.rift.analysis import EmbedFn, make_embed_fn


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


@pytest.fixture
def fake_embed() -> EmbedFn:
    return make_embed_fn(FakeEmbedder())
