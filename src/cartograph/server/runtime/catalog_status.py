"""The full ``status`` report of one catalog, built from what the runtime holds.

Split from :class:`~cartograph.server.runtime.catalog.CatalogRuntime` so that the
runtime holds state and this module only reads it: every server's health,
card, drift, pool, breaker, load and counters, plus the catalog's totals.
:mod:`cartograph.server.status_view` turns this into the agent's compact view.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from cartograph import error_codes as codes
from cartograph.cards.drift import DriftReport, reattest_command
from cartograph.cards.verified import VerifiedCards
from cartograph.config.model import ServerConfig
from cartograph.index.name_copies import SharedName


@dataclass(frozen=True)
class CatalogFacts:
    """What a status report reads: the catalog's state at one moment."""

    name: str
    servers: Mapping[str, ServerConfig]
    cards: VerifiedCards
    card_errors: Mapping[str, str]
    drift: DriftReport
    listed: Collection[str]
    """Servers whose live listing was compared with their card."""
    unchecked: Collection[str]
    gateway: Mapping[str, Any]
    """:meth:`Gateway.snapshot`: mode, and per-server pool, breaker, load and counters."""
    started_at: float
    shared: Mapping[tuple[str, str], SharedName] = field(default_factory=dict)
    """Tools whose names other servers' tools share (:meth:`ToolIndex.shared_names`)."""


def catalog_status(facts: CatalogFacts) -> dict[str, Any]:
    """Everything an operator needs at a glance (the caller redacts secrets, P-LOG-1)."""
    servers = [_server_status(facts, name) for name in facts.servers]
    return {
        "catalog": facts.name,
        "mode": facts.gateway["mode"],
        "uptime_s": round(time.time() - facts.started_at, 1),
        "servers": servers,
        "totals": {
            "servers": len(servers),
            "healthy": sum(1 for s in servers if s["health"] == "up"),
            "unchecked": len(facts.unchecked),
            "tools_servable": sum(s["tools"]["servable"] for s in servers),
            "tools_drifted": sum(len(s["drifted"]) for s in servers),
            "tools_unattested": sum(len(s["unattested"]) for s in servers),
            "restarts": sum(s["restarts"] for s in servers),
        },
    }


def _card_problem(facts: CatalogFacts, name: str) -> dict[str, Any]:
    """Why ``card`` is null: the code its verification failed with, and the fix."""
    if name in facts.cards:
        return {}
    code = facts.card_errors.get(name, codes.CARD_MISSING)
    fix = (
        f"run `cartograph cards verify` to see why, then `{reattest_command(name)}`"
        if code != codes.CARD_MISSING
        else f"run `{reattest_command(name)}`"
    )
    return {"card_error": {"code": code, "fix": fix}}


def _server_status(facts: CatalogFacts, name: str) -> dict[str, Any]:
    cfg = facts.servers[name]
    gw = facts.gateway["servers"][name]
    listed = name in facts.listed
    entries = sorted(facts.drift.for_server(name), key=lambda e: e.tool)
    summary = facts.cards.summary(name) if name in facts.cards else None
    by_status: dict[str, list[Any]] = {"drifted": [], "unattested": [], "missing": []}
    for entry in entries:
        if entry.status == "drifted":
            by_status["drifted"].append({"tool": entry.tool, "changed": list(entry.changed)})
        elif entry.status in by_status:
            by_status[entry.status].append(entry.tool)
    attested = summary.tools if summary is not None else 0
    servable = attested - len(by_status["drifted"]) - len(by_status["missing"])
    return {
        "name": name,
        "transport": cfg.transport,
        "stateless": cfg.stateless,
        "health": "connecting"
        if name in facts.unchecked
        else _health(listed, gw, facts.gateway["mode"]),
        "drift_checked": listed,
        "tools": {
            "attested": attested,
            "live": sum(1 for e in entries if e.status != "missing") if listed else None,
            "servable": servable if listed else attested,
        },
        "card": _card_status(facts.cards, name),
        **_card_problem(facts, name),
        **_shared_names(facts, name),
        **by_status,
        "reattest": reattest_command(name) if any(by_status.values()) else None,
        "pool": gw["pool"],
        "breaker": gw["breaker"],
        "load": gw["load"],
        "calls": gw["calls"],
        "failures": gw["failures"],
        "restarts": gw["pool"].get("restarts", 0),
        "last_error": gw["last_error"],
    }


def _shared_names(facts: CatalogFacts, name: str) -> dict[str, Any]:
    """This server's tools whose names other servers' tools share (absent when none).

    ``ranked_by_name`` false: the index holds the tool without its name (a
    look-alike or a copy of a name another server's tool backs); `cartograph
    rift` shows the groups, and ``vouch_name`` in the tool's table is the fix
    when the name is its own.
    """
    shared = [
        {
            "tool": tool,
            "also": note.also_names(),
            "ranked_by_name": note.ranked_by_name,
        }
        for (server, tool), note in facts.shared.items()
        if server == name
    ]
    return {"shared_names": shared} if shared else {}


def _health(listed: bool, gw: Mapping[str, Any], mode: str) -> str:
    if gw["breaker"]["state"] != "closed":
        return f"circuit {gw['breaker']['state']}"
    if mode == "pooled" and gw["pool"].get("sessions", 0) == 0:
        return "down" if gw["last_error"] or gw["pool"].get("open_failures") else "idle"
    if not listed:
        return "unknown"
    return "up"


def _card_status(cards: VerifiedCards, server: str) -> dict[str, Any] | None:
    """The card's version, signer, generator and age: from the manifest, no card parsed."""
    if server not in cards:
        return None
    summary, proof = cards.summary(server), cards.proof(server)
    return {
        "version": proof.version,
        "signer": proof.key_id,
        "generator": summary.generator,
        "created_at": summary.created_at,
    }


__all__ = ["CatalogFacts", "catalog_status"]
