"""What the `status` tool tells an agent: totals and only what is wrong.

The full report (:meth:`CatalogRuntime.status`: every server's health, card,
pool, breaker, load and counters) is about 10k cl100k tokens on the 16-server
demo — more than a whole task cycle. An agent needs to know whether it can
trust the catalog and, if not, which servers or tools to avoid and what fixes
them. So by default `status` returns :func:`compact_status`: the totals, and a
line per server *only* if something about it is wrong (down, circuit open,
drifted / unattested / missing tools, no card), with the command that fixes
it; servers still connecting at start-up are listed by name. ``detail=true``
returns the full report.
"""

from __future__ import annotations

from typing import Any, Final

HEALTHY: Final = frozenset({"up", "idle"})
"""Health values that are not a problem (``idle``: pooled, no session needed yet)."""
DETAIL_HINT: Final = "status with detail=true lists every server"


def compact_status(report: dict[str, Any]) -> dict[str, Any]:
    """The agent's view of a full status report: totals plus problems (see module docstring)."""
    problems = [p for p in (_problem(s) for s in report["servers"]) if p]
    connecting = [s["name"] for s in report["servers"] if s["health"] == "connecting"]
    out: dict[str, Any] = {
        "catalog": report["catalog"],
        "mode": report["mode"],
        "totals": report["totals"],
        "problems": problems,
    }
    if connecting:
        out["connecting"] = connecting
    out["detail"] = DETAIL_HINT
    return out


def _problem(server: dict[str, Any]) -> dict[str, Any]:
    """What is wrong with one server (empty when nothing is)."""
    found: dict[str, Any] = {}
    health = server["health"]
    if health not in HEALTHY and health != "connecting":
        found["health"] = health
        if server.get("last_error"):
            found["error"] = _first_line(server["last_error"])
    for status in ("drifted", "unattested", "missing"):
        tools = server.get(status) or []
        if tools:
            found[status] = [t["tool"] if isinstance(t, dict) else t for t in tools]
    no_card = server.get("card_error") or {}  # why the card is null (bad_signature, …)
    if server.get("card") is None:
        found["card"] = no_card.get("code", "none")
    if not found:
        return found
    if server.get("reattest"):
        found["fix"] = server["reattest"]
    elif server.get("card") is None:
        found["fix"] = no_card.get("fix") or f"cartograph bootstrap --server {server['name']}"
    return {"server": server["name"], **found}


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
