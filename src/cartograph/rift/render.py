"""Rift's report as rows, Markdown and JSON (the HTML page lives in ``html``).

Renderers only format; every number comes from :class:`RiftReport`. The rows
helpers are shared by the terminal table (``cli.rift``) and Markdown so both
always show the same columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from cartograph.rift.model import Cluster, Grouping, NameConfusable, RiftReport

MAX_MEMBERS_SHOWN: Final = 6
MAX_TOKENS_SHOWN: Final = 8

CLUSTER_COLUMNS: Final = (
    "#",
    "risk",
    "scope",
    "size",
    "coh",
    "margin_min",
    "members",
    "shared tokens",
    "REGENERATE",
)
COMPARISON_COLUMNS: Final = (
    "method",
    "clusters",
    "HIGH",
    "MEDIUM",
    "LOW",
    "tools in clusters",
    "within-server",
    "cross-server",
    "largest",
    "REGENERATE tools",
    "covers HIGH/MEDIUM tools",
)
SHORT_CLUSTER_COLUMNS: Final = ("#", "risk", "scope", "n", "coh", "margin", "tools")
NAME_COLUMNS: Final = ("kind", "scope", "normalised", "tools")


def fmt_margin(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def _clip(items: Sequence[str], limit: int) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", … (+{len(items) - limit})" if len(items) > limit else "")


def cluster_row(c: Cluster) -> list[str]:
    return [
        str(c.id),
        c.risk,
        c.scope,
        str(c.size),
        f"{c.cohesion:.3f}",
        fmt_margin(c.margin_min),
        _clip([m.key for m in c.members], MAX_MEMBERS_SHOWN),
        _clip(list(c.shared), MAX_TOKENS_SHOWN),
        _clip([m.key for m in c.regenerate], 3) if c.regenerate else "",
    ]


def short_cluster_row(c: Cluster) -> list[str]:
    """A terminal-width row: tools listed once per server, no token columns."""
    by_server: dict[str, list[str]] = {}
    for m in c.members:
        by_server.setdefault(m.server, []).append(m.tool)
    tools = "; ".join(f"{s}: {_clip(t, MAX_MEMBERS_SHOWN)}" for s, t in by_server.items())
    scope = "within" if c.scope == "within-server" else "cross"
    margin = fmt_margin(c.margin_min)
    return [str(c.id), c.risk, scope, str(c.size), f"{c.cohesion:.2f}", margin, tools]


def name_row(n: NameConfusable) -> list[str]:
    members = [f"{m.key} (ranks without its name)" if m in n.nameless else m.key for m in n.members]
    return [n.kind, n.scope, n.key, _clip(members, MAX_MEMBERS_SHOWN)]


_METRICS: Final = (
    ("Total clusters detected", "clusters"),
    ("HIGH-risk clusters", "high"),
    ("MEDIUM-risk clusters", "medium"),
    ("LOW-risk clusters", "low"),
    ("Tools in any cluster", "tools"),
    ("Within-server clusters", "within"),
    ("Cross-server clusters", "cross"),
    ("Largest cluster", "largest"),
    ("REGENERATE tools", "regenerate"),
    ("Covers Rift's HIGH/MEDIUM tools", "covers_risky"),
)


def comparison_table(report: RiftReport) -> tuple[list[str], list[list[str]]]:
    """The paper's Table 4/5 layout: one row per metric, one column per method."""
    columns = ["metric", *(g.method for g in report.comparison)]
    rows: list[list[str]] = []
    for label, attr in _METRICS:
        cells = [_metric_cell(g, attr, report.tools) for g in report.comparison]
        rows.append([label, *cells])
    return columns, rows


def _metric_cell(g: Grouping, attr: str, total_tools: int) -> str:
    value = getattr(g, attr)
    if value is None:
        return "—"
    if attr == "covers_risky":
        return f"{value:.0%}"
    if attr == "tools" and total_tools:
        return f"{value} ({value / total_tools:.1%})"
    return str(value)


def headline(report: RiftReport) -> str:
    """One line an operator reads first."""
    s = report.settings
    counts = ", ".join(f"{r} {len(report.by_risk(r))}" for r in ("HIGH", "MEDIUM", "LOW"))
    if not s.margin:
        counts = f"UNRATED {len(report.clusters)} (margin analysis off)"
    within = sum(c.scope == "within-server" for c in report.clusters)
    return (
        f"Rift: {len(report.clusters)} confusable clusters ({counts}) covering "
        f"{report.clustered_tools} of {report.tools} tools on {report.servers} servers; "
        f"{within} within-server, {len(report.clusters) - within} cross-server. "
        f"θ_sim={s.theta_sim:g}, HIGH<{s.high:g}, MEDIUM<{s.medium:g}, "
        f"{s.linkage} linkage, model {report.model_id}, {report.seconds.get('total', 0):.2f}s."
    )


def detail_lines(c: Cluster) -> list[str]:
    """Why a cluster is risky and what to change, one line each."""
    lines = [f"cluster {c.id} [{c.risk}] margin_min {fmt_margin(c.margin_min)}, {c.scope}"]
    lines += [f"  ! {note}" for note in c.notes]
    for m in c.members:
        tail = f"distinct: {', '.join(m.distinct[:MAX_TOKENS_SHOWN])}" if m.distinct else ""
        if m.copies:
            tail = f"REGENERATE — the same tool as {', '.join(m.copies)} but for the name"
        elif m.regenerate:
            tail = f"REGENERATE — shares every word with the others ({', '.join(c.shared[:6])})"
        lines.append(f"  - {m.key}  margin {fmt_margin(m.margin)}  {tail}".rstrip())
    for s in c.suggestions:
        lines.append(f"  → {s.text}")
        lines += [f"      {line}" for line in s.fix.splitlines()]
    return lines


def duplicate_lines(report: RiftReport) -> list[str]:
    """Each server connected twice, with the config change that fixes it."""
    lines: list[str] = []
    for d in report.duplicates:
        lines.append(f"duplicate server: {d.text}")
        lines += [f"      {line}" for line in d.fix.splitlines()]
    return lines


def gate_lines(clusters: Sequence[Cluster]) -> list[str]:
    lines: list[str] = []
    for c in clusters:
        lines.extend(detail_lines(c))
    return lines


def to_json(report: RiftReport) -> dict[str, Any]:
    """The full report plus a summary block, JSON-safe."""
    body = report.model_dump(mode="json")
    body["summary"] = {
        "clusters": len(report.clusters),
        "high": len(report.by_risk("HIGH")),
        "medium": len(report.by_risk("MEDIUM")),
        "low": len(report.by_risk("LOW")),
        "unrated": len(report.by_risk("UNRATED")),
        "tools_in_clusters": report.clustered_tools,
        "within_server": sum(c.scope == "within-server" for c in report.clusters),
        "cross_server": sum(c.scope == "cross-server" for c in report.clusters),
        "regenerate": [m.key for c in report.clusters for m in c.regenerate],
        "name_confusables": len([n for n in report.names if n.kind != "same-name"]),
    }
    return body


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return out


def to_markdown(report: RiftReport) -> str:
    lines = ["# Rift report", "", headline(report), "", "## Clusters", ""]
    if report.clusters:
        lines += _md_table(CLUSTER_COLUMNS, [cluster_row(c) for c in report.clusters])
    else:
        lines.append("No confusable clusters.")
    risky = report.at_least("MEDIUM")
    if risky:
        lines += ["", "## HIGH and MEDIUM clusters: diagnosis and suggestions", ""]
        for c in risky:
            lines += ["```", *detail_lines(c), "```", ""]
    if report.duplicates:
        lines += ["", "## Servers connected twice", ""]
        for d in report.duplicates:
            lines += [d.text, "", "```toml", d.fix, "```", ""]
    lines += ["", "## Ablation and baselines", ""]
    lines += _md_table(*comparison_table(report))
    lines += ["", "## Name confusables", ""]
    if report.names:
        lines += _md_table(NAME_COLUMNS, [name_row(n) for n in report.names])
    else:
        lines.append("No tool names collide or hide characters.")
    return "\n".join(lines) + "\n"


__all__ = [
    "CLUSTER_COLUMNS",
    "COMPARISON_COLUMNS",
    "NAME_COLUMNS",
    "SHORT_CLUSTER_COLUMNS",
    "cluster_row",
    "comparison_table",
    "detail_lines",
    "duplicate_lines",
    "fmt_margin",
    "gate_lines",
    "headline",
    "name_row",
    "short_cluster_row",
    "to_json",
    "to_markdown",
]
