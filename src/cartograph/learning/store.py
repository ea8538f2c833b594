"""The usage log's storage interface, and the records that cross it.

Everything learning persists goes through :class:`UsageStore`, a small
synchronous interface: the embedded default is SQLite in the state directory
(:class:`~cartograph.learning.sqlite.SqliteUsageStore`); a server database can
replace it by implementing the same methods. Callers never run these methods
on the event loop (:class:`~cartograph.learning.catalog.CatalogLearning`
offloads them to a worker thread), so an implementation may block.

Every method that reads evidence takes a catalog: nothing crosses catalogs.
Every task names the principal that logged it (the token's principal name;
:data:`LOCAL_PRINCIPAL` for the local one), so evidence can be weighed by who
produced it (:mod:`cartograph.learning.learner`) and forgotten per principal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import numpy as np

from cartograph.config.model import DEFAULT_MAX_CALLS_PER_TASK
from cartograph.index.embedders.base import Vectors

ToolKey = tuple[str, str]

OK: Final = "ok"
"""The outcome of a call that succeeded; only these count as evidence."""
LOCAL_PRINCIPAL: Final = "stdio"
"""The principal of a caller without a token (stdio, or HTTP with auth off); old rows'."""


def principal_name(principal: str | None) -> str:
    """The principal evidence is attributed to: the token's name, else the local one."""
    return principal if principal else LOCAL_PRINCIPAL


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
    principal: str = LOCAL_PRINCIPAL


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
    principal: str = LOCAL_PRINCIPAL


@dataclass(frozen=True)
class Retention:
    """How much of the log to keep: each catalog's newest ``max_tasks`` tasks, none older
    than ``max_age_days`` (one catalog's traffic never evicts another's evidence)."""

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
    principals: dict[str, dict[str, int]]
    """Per principal: ``tasks`` logged and ``calls`` attributed to them."""
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

    def add_call(self, record: CallRecord, *, max_calls: int = DEFAULT_MAX_CALLS_PER_TASK) -> bool:
        """Log one call's outcome; durable on return.

        Returns False, logging nothing, when the task is gone or already holds
        ``max_calls`` call rows (the per-task bound).
        """
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
        """Apply ``retention`` (counted per catalog); returns how many tasks were deleted."""
        ...

    def forget(
        self,
        *,
        before: float | None = None,
        catalog: str | None = None,
        principal: str | None = None,
    ) -> int:
        """Delete tasks (and their calls) created before ``before`` (all when None),
        only ``catalog``'s and only ``principal``'s when given."""
        ...

    def status(self) -> UsageStatus: ...

    def export(
        self, *, catalog: str | None = None, principal: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every task (of ``catalog``, of ``principal``) as a JSON-ready dict with its
        surfaced tools and calls (no vectors)."""
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


# -- what every SQL implementation shares --------------------------------------

Fetch = Callable[[str, tuple[Any, ...]], list[Any]]
"""Run one read query with its parameters and return every row."""

EXPORT_PAGE: Final = 500


@dataclass(frozen=True)
class ExportQueries:
    """One SQL dialect's three export queries (tasks page, surfaced tools, calls).

    ``tasks`` takes (catalog, catalog, principal, principal, last id, page
    size); the other two take the page's first and last task id. Only the
    dialect differs between implementations; paging and record shape are
    :func:`export_tasks`'.
    """

    tasks: str
    surfaced: str
    calls: str


def export_tasks(
    fetch: Fetch, queries: ExportQueries, catalog: str | None, principal: str | None = None
) -> Iterator[dict[str, Any]]:
    """Every task as a JSON-ready dict, read in pages so a large log is never held at once."""
    last = 0
    while True:
        page = fetch(queries.tasks, (catalog, catalog, principal, principal, last, EXPORT_PAGE))
        if not page:
            return
        span = (page[0][0], page[-1][0])
        surfaced = _by_task(fetch(queries.surfaced, span))
        calls = _by_task(fetch(queries.calls, span))
        for task_id, cat, principal, session, created, task, model in page:
            yield {
                "id": task_id,
                "catalog": cat,
                "principal": principal,
                "session": session,
                "time": iso_time(created),
                "task": task,
                "model": model,
                "surfaced": [f"{s}/{t}" for s, t in surfaced.get(task_id, [])],
                "calls": [
                    {"tool": f"{s}/{t}", "outcome": o, "time": iso_time(c)}
                    for s, t, o, c in calls.get(task_id, [])
                ],
            }
        last = span[1]


def evidence_from_rows(rows: Sequence[Sequence[Any]]) -> list[Evidence]:
    """Group (task id, task, vector blob, principal, server, tool) rows, ordered by task."""
    out: list[Evidence] = []
    tools: dict[ToolKey, None] = {}
    for i, (task_id, task, blob, principal, server, tool) in enumerate(rows):
        tools[(server, tool)] = None
        if i + 1 == len(rows) or rows[i + 1][0] != task_id:
            vector = as_vector(bytes(blob))
            out.append(Evidence(int(task_id), task, vector, tuple(tools), principal))
            tools = {}
    return out


def iso_time(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _by_task(rows: list[Any]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for row in rows:
        out.setdefault(row[0], []).append(tuple(row[1:]))
    return out
