"""Rift's settings and its report, as small frozen value objects.

The report is the one thing every renderer (text, JSON, Markdown, HTML) and
the CI gate read, so it carries everything they need and nothing they must
recompute.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from cartograph.validation import StrictModel

DEFAULT_THETA_SIM: Final = 0.65
DEFAULT_HIGH_MARGIN: Final = -0.05
"""HIGH: some member's own task probe already prefers a rival by at least 0.05
(or the two cards are identical, or identical but for the names) — retrieval
picks the wrong tool on a task built for the right one. Picked by 3 of 4
leave-one-set-out folds over the demo, LiveMCPBench, MetaTool and
hostile-publisher sets (docs/rift.md, "Validation": re-check it when card text
changes); the paper's 0.10 is ``--paper``."""
DEFAULT_MEDIUM_MARGIN: Final = 0.30
"""MEDIUM below 0.30: at 0.20 a third of MetaTool's (training data) observed
confusions sat in LOW clusters; at 0.30 none did."""
PAPER_HIGH_MARGIN: Final = 0.10
PAPER_MEDIUM_MARGIN: Final = 0.20
DEFAULT_COSINE_TAU: Final = 0.65
DEFAULT_JACCARD_J: Final = 0.25
DEFAULT_LINKAGE: Final = "complete"

Risk = Literal["HIGH", "MEDIUM", "LOW", "UNRATED"]
"""UNRATED: Layer 1 found the cluster but margin analysis was switched off."""
Linkage = Literal["complete", "average", "single"]
Scope = Literal["within-server", "cross-server"]
ProbeMode = Literal["distinguishing", "arguments", "name+arguments"]
"""Layer 2's probes: ``arguments`` is the paper's exact q_t = f(args(t));
``distinguishing`` (default) is the same, except that a pair of tools whose
arguments give the same probe is compared with probes that add their names
(then their servers); ``name+arguments`` always adds the name."""
DEFAULT_PROBE: Final = "distinguishing"
RISK_ORDER: Final[dict[str, int]] = {"HIGH": 0, "MEDIUM": 1, "LOW": 2, "UNRATED": 3}


class RiftSettings(StrictModel):
    """Thresholds of the paper's §3.4, all configurable, with its defaults.

    ``linkage`` defaults to *complete*: a cluster then guarantees that every
    pair of its members is at least ``theta_sim`` similar, which is what
    "confusable with each other" means to a reader, and it cannot chain. Single
    linkage would be the connected components of the threshold graph, i.e. the
    plain cosine baseline itself.
    """

    theta_sim: float = Field(default=DEFAULT_THETA_SIM, gt=0.0, le=1.0)
    high: float = Field(default=DEFAULT_HIGH_MARGIN)
    medium: float = Field(default=DEFAULT_MEDIUM_MARGIN)
    linkage: Linkage = DEFAULT_LINKAGE
    margin: bool = True
    probe: ProbeMode = DEFAULT_PROBE
    actions: bool = True
    """A pair whose names state different actions (get/update) is at most MEDIUM."""
    duplicates: bool = True
    """Tool pairs of the same server connected twice are reported, not rated."""
    identical: bool = True
    """A confusable pair with identical card text is HIGH whatever its margin."""
    copies: bool = True
    """Name-only copies (same publisher description and input schema, cards equal but for
    the names: :mod:`cartograph.rift.copies`) share a cluster, which is HIGH whatever its
    margins, and each copy is REGENERATE."""
    cosine_tau: float = Field(default=DEFAULT_COSINE_TAU, gt=0.0, le=1.0)
    jaccard_j: float = Field(default=DEFAULT_JACCARD_J, ge=0.0, lt=1.0)

    @model_validator(mode="after")
    def _bands_are_ordered(self) -> RiftSettings:
        if self.high > self.medium:
            raise ValueError(f"high margin {self.high} must not exceed medium {self.medium}")
        return self

    @classmethod
    def paper(cls, **overrides: object) -> RiftSettings:
        """The paper's §3.4 settings exactly: argument-only probes, HIGH < 0.10, MEDIUM < 0.20."""
        base: dict[str, object] = {
            "probe": "arguments",
            "actions": False,
            "duplicates": False,
            "identical": False,
            "copies": False,
            "high": PAPER_HIGH_MARGIN,
            "medium": PAPER_MEDIUM_MARGIN,
        }
        base.update(overrides)
        return cls.model_validate(base)

    @property
    def delta(self) -> float:
        """Layer 1's distance threshold δ = 1 − θ_sim."""
        return 1.0 - self.theta_sim


class ToolRef(StrictModel):
    server: str
    tool: str

    @property
    def key(self) -> str:
        return f"{self.server}/{self.tool}"


class Member(ToolRef):
    """One tool of a cluster with its Layer 2 and Layer 3 diagnosis."""

    query: str = ""
    margin: float | None = None
    nearest: str | None = None
    """The other member its synthetic query scores highest (``server/tool``)."""
    rank: int | None = None
    """Where the tool ranks for its own query among *all* tools (1 = first)."""
    reprobed: tuple[str, ...] = ()
    """Members whose arguments give the same probe as this tool's: each such pair
    was compared with probes that add the tools' names (then servers)."""
    distinct: tuple[str, ...] = ()
    regenerate: bool = False
    copies: tuple[str, ...] = ()
    """Members that are this tool under another name (``server/tool``): same publisher
    description and input schema, cards equal but for the names. Any makes it REGENERATE."""


class Suggestion(StrictModel):
    """Words that would separate one member from the rest of its cluster."""

    server: str
    tool: str
    words: tuple[str, ...]
    source: Literal["card", "name", "arguments", "none"]
    text: str
    kind: Literal["override", "deny", "none"] = "override"
    fix: str = ""
    """Exact text an operator can paste: a card override (TOML for ``[cards] overrides``)
    or a catalog ``deny`` rule."""


class DuplicateServers(StrictModel):
    """Two servers that list identical tools: one server connected twice."""

    servers: tuple[str, str]
    tools: int
    text: str
    fix: str


class Cluster(StrictModel):
    id: int
    risk: Risk
    scope: Scope
    servers: tuple[str, ...]
    cohesion: float
    margin_min: float | None
    members: tuple[Member, ...]
    shared: tuple[str, ...]
    suggestions: tuple[Suggestion, ...] = ()
    notes: tuple[str, ...] = ()
    duplicate: bool = False
    """Every pair is one tool of a server connected twice (see ``RiftReport.duplicates``)."""

    @property
    def keys(self) -> frozenset[str]:
        """The members' ``server/tool`` keys: a cluster's identity in a baseline."""
        return frozenset(m.key for m in self.members)

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def regenerate(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if m.regenerate)


class NameConfusable(StrictModel):
    """Tool names a person or a model could mistake for one another, or one that hides
    characters (``invisible``: a single member; ``key`` shows them as code points)."""

    kind: Literal["invisible", "same-name", "normalised", "lookalike"]
    scope: Scope
    key: str
    members: tuple[ToolRef, ...]
    nameless: tuple[ToolRef, ...] = ()
    """Members that rank without their name: look-alike spellings, and copies of a
    name another server's tool backs (:mod:`cartograph.index.name_copies`)."""


class Grouping(StrictModel):
    """One row of the ablation/baseline comparison (the paper's Tables 4–5)."""

    method: str
    clusters: int
    high: int | None = None
    medium: int | None = None
    low: int | None = None
    tools: int
    within: int
    cross: int
    largest: int
    regenerate: int | None = None
    covers_risky: float | None = None
    """Share of Rift's HIGH/MEDIUM tools that this grouping also groups."""


class Point(StrictModel):
    """A tool on the 2-D map (PCA of its card embedding)."""

    server: str
    tool: str
    x: float
    y: float
    cluster: int | None
    risk: Risk | None


class RiftReport(StrictModel):
    settings: RiftSettings
    model_id: str
    servers: int
    tools: int
    clusters: tuple[Cluster, ...]
    names: tuple[NameConfusable, ...]
    comparison: tuple[Grouping, ...]
    points: tuple[Point, ...]
    duplicates: tuple[DuplicateServers, ...] = ()
    seconds: dict[str, float] = Field(default_factory=dict)

    def by_risk(self, risk: Risk) -> tuple[Cluster, ...]:
        return tuple(c for c in self.clusters if c.risk == risk)

    def at_least(self, risk: Literal["HIGH", "MEDIUM"]) -> tuple[Cluster, ...]:
        """Clusters whose risk is ``risk`` or worse: what a CI gate fails on."""
        limit = RISK_ORDER[risk]
        return tuple(c for c in self.clusters if RISK_ORDER[c.risk] <= limit)

    @property
    def clustered_tools(self) -> int:
        """Tools in any cluster, each once (a name-only copy can sit in two)."""
        return len({m.key for c in self.clusters for m in c.members})


__all__ = [
    "DEFAULT_COSINE_TAU",
    "DEFAULT_HIGH_MARGIN",
    "DEFAULT_JACCARD_J",
    "DEFAULT_LINKAGE",
    "DEFAULT_MEDIUM_MARGIN",
    "DEFAULT_PROBE",
    "DEFAULT_THETA_SIM",
    "PAPER_HIGH_MARGIN",
    "PAPER_MEDIUM_MARGIN",
    "RISK_ORDER",
    "Cluster",
    "DuplicateServers",
    "Grouping",
    "Linkage",
    "Member",
    "NameConfusable",
    "Point",
    "ProbeMode",
    "RiftReport",
    "RiftSettings",
    "Risk",
    "Scope",
    "Suggestion",
    "ToolRef",
]
