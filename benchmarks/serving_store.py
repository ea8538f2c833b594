"""The card stores ``serving_scale.py`` measures: prepared, changed, re-signed.

``serving_scale.py`` runs each of these in a child process of its own, with the
measured tree's code first on the path (``--prepare SCALE``, ``--change WHAT``,
``--resign``), so a store is always written by the code that will serve it. None
of it is timed as serving: the measured child only reads what is written here.

- *prepare*: template cards signed by a persisted key into a card store on
  disk, a trust file, the signed snapshot manifest where the tree has one, and
  the embedding cache filled (composed vectors at 10k/100k, exactly as in
  ``discover_latency.prepare``; real MiniLM vectors at 527);
- *change*: what an operator does between two restarts, one card re-attested or
  one server added, the manifest re-signed over every card;
- *resign*: the manifest signed again by this tree's code, for a store copied
  from another tree (``--copy-prepared``).

The sibling scripts (``discover_latency``, ``synthetic_catalog``) are imported by
name: ``serving_scale.py`` puts this folder on the path.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

# --- prepare: a card store, a trust file and a warm embedding cache -------------


def prepare(scale: str, state: Path) -> dict[str, Any]:
    """Sign template cards into ``state``'s store and fill the embedding cache."""
    from discover_latency import load_scale

    from cartograph.cards.attest import build_body
    from cartograph.cards.generators.template import TemplateGenerator
    from cartograph.cards.keys import SigningKey
    from cartograph.cards.signing import render_card, sign_card
    from cartograph.cards.store import CardStore
    from cartograph.cards.trust import TrustSet, save_trust
    from cartograph.fsutil import atomic_write_bytes

    started = time.perf_counter()
    catalog, _, parts = load_scale(scale, 0)
    generator = TemplateGenerator()
    texts = generator.describe_all(catalog.servers)
    key = SigningKey.generate()
    store = CardStore(state)
    store.root.mkdir(parents=True, exist_ok=True)
    for server in catalog.servers:
        body = build_body(server, texts[server.name], generator.info, version=1)
        atomic_write_bytes(store.path_for(server.name), render_card(sign_card(body, key)))
    trust = TrustSet.of(key.public)
    save_trust(trust, state / "trust.toml")
    try:  # as bootstrap does, where this checkout has the signed snapshot manifest
        from cartograph.cards.manifest import write_manifest
    except ImportError:
        pass
    else:
        write_manifest(store, key, trust)
    _save_key(state, key)
    written = time.perf_counter()
    del catalog, texts
    _fill_cache(state, trust, parts)
    return {"cards_s": round(written - started, 1), "s": round(time.perf_counter() - started, 1)}


def _fill_cache(state: Path, trust: Any, parts: dict[Any, Any] | None) -> None:
    """Build the index once so the cache holds every text the measured build asks for.

    Real MiniLM vectors for LiveMCPBench; at 10k/100k vectors composed from
    the tool's parts (as in ``discover_latency.prepare``), served under the
    real model id, for whichever texts this checkout's index embeds.
    """
    from cartograph.cards.store import CardStore
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.embedders import get_embedder
    from cartograph.index.entries import entries_from_cards
    from cartograph.index.tool_index import ToolIndex

    # The operator's first start: verify every card and record accepted versions.
    cards = CardStore(state).load_verified(trust)
    model = get_embedder("minilm")
    embedder: Any = model
    if parts is not None:
        embedder = _TableEmbedder(
            model.model_id, _composed(model, entries_from_cards(cards), parts)
        )
    ToolIndex.build(cards, embedder, cache=EmbeddingCache(state), **store_for(state))


def store_for(state: Path) -> dict[str, Any]:
    """The persisted index (``index/vector_store.py``) if this checkout has one, as serve uses."""
    try:
        from cartograph.index.vector_store import VectorStore
    except ImportError:  # an older checkout: the embedding cache alone
        return {}
    return {"store": VectorStore(state)}


class _TableEmbedder:
    """Serves precomputed vectors under the real model id, to fill the cache."""

    def __init__(self, model_id: str, table: dict[str, Any]) -> None:
        self.model_id = model_id
        self.dim = 384
        self._table = table

    def embed(self, texts: Any) -> Any:
        import numpy as np

        return np.stack([self._table[t] for t in texts]).astype(np.float32)


def _composed(model: Any, entries: Any, parts: dict[Any, Any]) -> dict[str, Any]:
    import zlib

    import numpy as np
    from synthetic_catalog import DOMAINS, OBJECTS, QUALIFIERS, VERBS

    units = sorted({*VERBS, *OBJECTS, *DOMAINS, *QUALIFIERS})
    unit = dict(zip(units, model.embed(units), strict=True))
    table: dict[str, Any] = {}
    for e in entries:
        p = parts[(e.server, e.tool)]
        jitter = np.random.default_rng(zlib.crc32(f"{e.server}/{e.tool}".encode()))
        noise = 0.05 * jitter.standard_normal(384).astype(np.float32)
        v = unit[p.verb] + 1.5 * unit[p.obj] + 0.7 * unit[p.domain] + 0.3 * unit[p.qualifier]
        table[e.text] = (v + noise) / np.linalg.norm(v + noise)
        name_text = getattr(e, "name_text", None)  # a second, name-only view (newer indexes)
        if name_text is not None:
            n = unit[p.verb] + 1.5 * unit[p.obj] + 0.5 * unit[p.domain]
            table.setdefault(name_text, n / np.linalg.norm(n))
    return table


# --- change: what an operator does between two restarts -------------------------

BENCH_KEY = "bench-signing-key.pem"
CHANGES = ("card", "server")


def _save_key(state: Path, key: Any) -> None:
    """Keep the signing key beside the store so a later step can re-attest one card."""
    from cartograph.cards.keys import write_private_key

    write_private_key(key, state / BENCH_KEY)


def _bench_key(state: Path) -> Any:
    """The store's signing key; a store prepared without one gets a new key, trusted."""
    from cartograph.cards.keys import SigningKey, load_private_key
    from cartograph.cards.trust import TrustedKey, load_trust, save_trust

    path = state / BENCH_KEY
    if path.exists():
        return load_private_key(path)
    key = SigningKey.generate()
    trust = load_trust(state / "trust.toml")
    save_trust(trust.with_key(TrustedKey(key.public)), state / "trust.toml")
    _save_key(state, key)
    return key


def change(state: Path, what: str, run: int) -> dict[str, Any]:
    """Re-attest one card with new text (``card``) or add one new server (``server``).

    As ``cartograph bootstrap --server NAME`` does: the new card is signed and
    written, then the manifest is re-signed over every card. ``run`` picks a
    different card (or a new server name) on each run, so every measured
    restart after it sees exactly one changed card.
    """
    import random

    from synthetic_catalog import _server

    from cartograph.cards.attest import build_body
    from cartograph.cards.generators.template import TemplateGenerator
    from cartograph.cards.manifest import write_manifest
    from cartograph.cards.signing import sign_card
    from cartograph.cards.store import CardStore
    from cartograph.cards.trust import load_trust
    from cartograph.catalog.model import ServerDef, ToolDef

    started = time.perf_counter()
    store, key = CardStore(state), _bench_key(state)
    servers = store.servers()
    if what == "card":
        name = servers[(run * 7919) % len(servers)]
        old = store.read(name)
        tools = tuple(
            ToolDef.model_validate(
                {
                    "name": t.name,
                    "description": f"{t.description} (revision {run})",
                    "inputSchema": t.input_schema,
                }
            )
            for t in old.body.tools
        )
        server = ServerDef(name=name, description=old.body.capability.summary, tools=tools)
    else:
        server, _ = _server(random.Random(run), 900_000 + run, 25)
    version = store.accepted_version(server.name) + 1  # a re-run re-attests, never reuses
    generator = TemplateGenerator()
    text = generator.describe_all([server])[server.name]
    with store.batch():
        store.write(sign_card(build_body(server, text, generator.info, version=version), key))
    write_manifest(store, key, load_trust(state / "trust.toml"))
    return {"changed": what, "server": server.name, "s": round(time.perf_counter() - started, 1)}


def resign(state: Path) -> dict[str, Any]:
    """Re-sign the manifest with this checkout's code, as a ``cartograph bootstrap`` re-run does.

    A store copied from another source (``--copy-prepared``) holds that
    source's manifest; this checkout's manifest may pin more (reply tables).
    """
    try:
        from cartograph.cards.manifest import write_manifest
    except ImportError:
        return {"resigned": False}
    from cartograph.cards.store import CardStore
    from cartograph.cards.trust import load_trust

    started = time.perf_counter()
    write_manifest(CardStore(state), _bench_key(state), load_trust(state / "trust.toml"))
    return {"resigned": True, "s": round(time.perf_counter() - started, 1)}
