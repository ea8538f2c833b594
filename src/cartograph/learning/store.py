"""The usage log's storage interface, and the records that cross it.

Everything learning persists goes through :class:`UsageStore`, a small
synchronous interface: the embedded default is SQLite in the state directory
(:class:`~cartograph.learning.sqlite.SqliteUsageStore`); a server database can
replace it by implementing the same methods. Callers never run these methods
on the event loop (:class:`~cartograph.learning.catalog.CatalogLearning`
offloads them to a worker thread), so an implementation may block.

Every method that reads evidence takes a catalog: nothing crosses catalogs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import numpy as np

from cartograph.index.embedders.base import Vectors

ToolKey = tuple[str, str]

OK: Final = "ok"
"""The outcome of a call that succeeded; only these count as evidence."""


@dataclass(frozen=True)
class SurfacedTool:
    """One tool ``discover`` returned, with the fingerprint of the card entry it served."""

    server: str
    tool: str
    digest: str


@dataclass(frozen=True)
class TaskRecord:
    """One ``discover``: the task, its embedding, and what the agent was shown."""

    catalog: str
    session: str
    task: str
    model: str
    vector: Vectors
    surfaced: tuple[SurfacedTool, ...]
    created: float


@dataclass(frozen=True)
class CallRecord:
    """One ``call`` attributed to a logged task of the same MCP session."""

    task_id: int
    server: str
    tool: str
    digest: str
    outcome: str
    created: float


@dataclass(frozen=True)
class Evidence:
    """A logged task and the tools that served it (successful calls only)."""

    task_id: int
    task: str
    vector: Vectors
    tools: tuple[ToolKey, ...]


@dataclass(frozen=True)
class Retention:
    """How much of the log to keep: at most ``max_tasks`` rows, none older than ``max_age_days``."""

    max_tasks: int
    max_age_days: float


@dataclass(frozen=True)
class UsageStatus:
    """What ``cartograph learning status`` prints."""

    location: str
    schema_version: int
    tasks: int
    calls: int
    outcomes: dict[str, int]
    catalogs: dict[str, int]
    oldest: float | None
    newest: float | None
    size_bytes: int
    extra: dict[str, Any] = field(default_factory=dict)


class UsageStore(Protocol):
    """Persistence for the usage log (see the module docstring)."""

    @property
    def location(self) -> str:
        """Where the log lives, for status output (a path or a redacted URL)."""
        ...

    def add_task(self, record: TaskRecord) -> int:
        """Log one discover; returns the task id calls will refer to. Durable on return."""
        ...

    def add_call(self, record: CallRecord) -> None:
        """Log one call's outcome. Durable on return."""
        ...

    def evidence(self, catalog: str, model: str, *, limit: int) -> list[Evidence]:
        """The newest ``limit`` tasks of ``catalog`` by ``model`` with a successful call."""
        ...

    def drop_stale(self, catalog: str, digests: Mapping[str, Mapping[str, str]]) -> int:
        """Delete evidence of tools whose card entry changed (``digests``: server → tool → digest).

        Only servers named in ``digests`` are judged (a server whose card did
        not load this time keeps its evidence); a tool no longer on its card, or
        with another fingerprint, loses its successful calls. Returns the rows deleted.
        """
        ...

    def prune(self, retention: Retention, *, now: float) -> int:
        """Apply ``retention``; returns how many tasks were deleted."""
        ...

    def forget(self, *, before: float | None = None, catalog: str | None = None) -> int:
        """Delete tasks (and their calls) created before ``before`` (all when None)."""
        ...

    def status(self) -> UsageStatus: ...

    def export(self, *, catalog: str | None = None) -> Iterator[dict[str, Any]]:
        """Every task as a JSON-ready dict with its surfaced tools and calls (no vectors)."""
        ...

    def close(self) -> None: ...


def as_vector(blob: bytes, dim: int | None = None) -> Vectors:
    """A stored float32 vector (little-endian bytes) as a read-only numpy row."""
    row = np.frombuffer(blob, dtype="<f4")
    if dim is not None and row.shape[0] != dim:
        raise ValueError(f"stored vector has {row.shape[0]} dimensions, expected {dim}")
    out: Vectors = row.astype(np.float32, copy=False)
    return out


def vector_bytes(vector: Vectors) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()
