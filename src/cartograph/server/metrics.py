"""Prometheus metrics: what operators scrape from ``GET /metrics`` (``prometheus_client``).

Counted as calls finish (:func:`observe`, fed by ``ProxyHandlers`` with the
same facts its audit record holds): proxy calls, errors and latency per
catalog, proxy tool, server and tool; ``discover`` latency and abstentions.
Read at scrape time from every live :class:`~cartograph.server.runtime.catalog.CatalogRuntime`
(:class:`_RuntimeCollector`): upstream health, breaker state, pooled
sessions, in-flight calls, verified cards, drifted and servable tools, and
the audit sink's spool.

One registry per process (a replica is a process): every catalog reports
into it with its own ``catalog`` label. ``/metrics`` keeps the rest of the
HTTP surface's rules (``docs/fleet.md``): with tokens configured it needs a
valid one and shows only the catalogs that token reaches (P-AUTH-5).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, Final, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cartograph import error_codes as codes
from cartograph.server.tools import ALL_PROXY_TOOLS


class MeteredCatalog(Protocol):
    """What the gauges read from a runtime (:class:`~cartograph.server.runtime.CatalogRuntime`)."""

    name: str
    cards: Any
    card_errors: dict[str, str]
    audit: Any

    def status(self) -> dict[str, Any]: ...


CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS: Final = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
)
BREAKER_STATES: Final = {"closed": 0, "half-open": 1, "open": 2}
NONE: Final = ""
"""Label value where a call named no upstream (discover, status, refusals before parsing)."""
UNKNOWN: Final = "unknown"
"""Label value for a name the federation does not have: callers cannot choose label values."""
_OUTCOMES: Final = frozenset({"ok", "tool_error", "cancelled"})

REGISTRY = CollectorRegistry(auto_describe=True)

CALLS = Counter(
    "cartograph_calls",
    "Proxy tool calls answered, by outcome (ok or the error code).",
    ("catalog", "proxy_tool", "server", "tool", "outcome"),
    registry=REGISTRY,
)
ERRORS = Counter(
    "cartograph_call_errors",
    "Proxy tool calls answered with an error (any outcome but ok).",
    ("catalog", "proxy_tool", "server", "tool"),
    registry=REGISTRY,
)
LATENCY = Histogram(
    "cartograph_call_duration_seconds",
    "Time from a proxy tool call's arrival to its answer (audit write included).",
    ("catalog", "proxy_tool", "server", "tool"),
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
DISCOVER_LATENCY = Histogram(
    "cartograph_discover_duration_seconds",
    "discover: ranking time, per catalog.",
    ("catalog",),
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
DISCOVERS = Counter(
    "cartograph_discover",
    "discover answers, by whether the ranker abstained (abstention rate = abstained/all).",
    ("catalog", "abstained"),
    registry=REGISTRY,
)


def observe(
    *,
    catalog: str,
    proxy_tool: str,
    server: str | None,
    tool: str | None,
    outcome: str,
    seconds: float,
    abstained: bool | None = None,
    known: Callable[[str, str | None], bool] | None = None,
) -> None:
    """Count one answered proxy call (``abstained``: set for a ranked ``discover``).

    Every label value comes from a bounded set, so no caller can grow the
    scrape: ``catalog`` from the config, ``proxy_tool`` from Cartograph's own
    tools, ``outcome`` from the error registry, and ``server``/``tool`` only
    when ``known(server, tool)`` (the federation has it; ``known(server,
    None)``: the server alone) — any other name counts under ``unknown``.
    """
    server_label, tool_label = _upstream_labels(server, tool, known)
    labels = (
        catalog,
        proxy_tool if proxy_tool in ALL_PROXY_TOOLS else UNKNOWN,
        server_label,
        tool_label,
    )
    bounded = outcome if outcome in _OUTCOMES or outcome in codes.REGISTRY else UNKNOWN
    CALLS.labels(*labels, bounded).inc()
    if outcome != "ok":
        ERRORS.labels(*labels).inc()
    LATENCY.labels(*labels).observe(seconds)
    if abstained is not None:
        DISCOVER_LATENCY.labels(catalog).observe(seconds)
        DISCOVERS.labels(catalog, "true" if abstained else "false").inc()


def _upstream_labels(
    server: str | None, tool: str | None, known: Callable[[str, str | None], bool] | None
) -> tuple[str, str]:
    if not server:
        return NONE, NONE if not tool else UNKNOWN
    if known is None or not known(server, None):
        return UNKNOWN, NONE if not tool else UNKNOWN
    if not tool:
        return server, NONE
    return server, tool if known(server, tool) else UNKNOWN


_RUNTIMES: weakref.WeakSet[MeteredCatalog] = weakref.WeakSet()


def track(runtime: MeteredCatalog) -> None:
    """Report ``runtime``'s health at every scrape until it closes (or is collected)."""
    _RUNTIMES.add(runtime)


def untrack(runtime: MeteredCatalog) -> None:
    _RUNTIMES.discard(runtime)


class _RuntimeCollector(Collector):
    """Gauges read from every live runtime's ``status()`` at scrape time."""

    def collect(self) -> Iterator[Metric]:
        gauges = {
            "up": _gauge("upstream_up", "1 when the upstream is healthy (status: up).", True),
            "breaker": _gauge(
                "upstream_breaker_state", "Circuit breaker: 0 closed, 1 half-open, 2 open.", True
            ),
            "sessions": _gauge("upstream_sessions", "Pooled upstream sessions open.", True),
            "in_flight": _gauge("upstream_in_flight", "Upstream calls running now.", True),
            "cards": _gauge("cards_verified", "Servers with a verified card.", False),
            "card_errors": _gauge("cards_refused", "Cards that failed verification.", False),
            "drifted": _gauge("tools_drifted", "Tools hidden: drifted from their card.", False),
            "servable": _gauge("tools_servable", "Tools discover and call may serve.", False),
            "spooled": _gauge(
                "audit_spooled", "Audit records spooled locally (database unreachable).", False
            ),
        }
        for runtime in list(_RUNTIMES):
            _read(runtime, gauges)
        yield from gauges.values()


def _gauge(name: str, documentation: str, per_server: bool) -> GaugeMetricFamily:
    labels = ["catalog", "server"] if per_server else ["catalog"]
    return GaugeMetricFamily(f"cartograph_{name}", documentation, labels=labels)


def _read(runtime: MeteredCatalog, gauges: dict[str, GaugeMetricFamily]) -> None:
    status = runtime.status()
    catalog = runtime.name
    for server in status["servers"]:
        labels = [catalog, server["name"]]
        gauges["up"].add_metric(labels, 1.0 if server["health"] == "up" else 0.0)
        state = server["breaker"].get("state", "closed")
        gauges["breaker"].add_metric(labels, float(BREAKER_STATES.get(state, 2)))
        gauges["sessions"].add_metric(labels, float(server["pool"].get("sessions", 0)))
        gauges["in_flight"].add_metric(labels, float(server["load"].get("in_flight", 0)))
    totals = status["totals"]
    gauges["cards"].add_metric([catalog], float(len(runtime.cards)))
    gauges["card_errors"].add_metric([catalog], float(len(runtime.card_errors)))
    gauges["drifted"].add_metric([catalog], float(totals["tools_drifted"]))
    gauges["servable"].add_metric([catalog], float(totals["tools_servable"]))
    spool = getattr(runtime.audit, "spool", None)
    gauges["spooled"].add_metric([catalog], float(spool.count if spool is not None else 0))


REGISTRY.register(_RuntimeCollector())


class _Visible(Collector):
    """The registry's metrics with only the samples of ``catalogs`` (None: every catalog)."""

    def __init__(self, catalogs: Collection[str] | None) -> None:
        self.catalogs = catalogs

    def collect(self) -> Iterable[Metric]:
        for family in REGISTRY.collect():
            if self.catalogs is not None:
                family.samples = [
                    s for s in family.samples if s.labels.get("catalog", NONE) in self.catalogs
                ]
            yield family


def exposition(catalogs: Collection[str] | None = None) -> bytes:
    """The text format Prometheus scrapes, limited to ``catalogs`` when given."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Visible(catalogs))
    return generate_latest(registry)
