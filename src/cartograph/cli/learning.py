"""``cartograph learning status | forget | export``: the usage log, for its operator.

The log lives in the config's state directory (``usage.sqlite3``); these
commands open it directly (no servers are contacted), safely while ``serve``
writes it: ``status`` and ``export`` open it read-only, ``forget`` writes
through SQLite's own locking like the server does. ``forget`` is how an
operator honours a deletion request or starts learning afresh; ``--principal``
narrows ``forget`` and ``export`` to one principal's tasks (``stdio`` is the
local one), and ``status`` counts each principal's.
"""

from __future__ import annotations

import calendar
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from cartograph import error_codes as codes
from cartograph.cli.app import ConfigOption, JsonOption, app, load_config_or_defaults
from cartograph.cli.output import print_json, print_table, stderr, stdout
from cartograph.errors import OptionError

learning_app = typer.Typer(
    help="The usage log that discover learns from: status, forget, export.",
    no_args_is_help=True,
)
app.add_typer(learning_app, name="learning")

CatalogNameOption = Annotated[
    str | None, typer.Option("--catalog", help="Only this catalog (default: all).")
]
PrincipalOption = Annotated[
    str | None,
    typer.Option(
        "--principal", help="Only this principal's tasks (a token's name; stdio: the local one)."
    ),
]


def _store(config_path: Path | None, *, write: bool = False) -> Any:
    """The log and the config; an empty stand-in when no proxy has written a log yet.

    No command creates it: `status` in a fresh folder should not leave a state
    directory behind. Only ``write`` opens the file writable.
    """
    from cartograph.learning import SqliteUsageStore, usage_log_path
    from cartograph.storage import open_usage_store, uses_database

    config = load_config_or_defaults(config_path)
    if uses_database(config):  # the shared log of a fleet ([storage] url)
        return open_usage_store(config), config
    path = usage_log_path(config.state_dir)
    if not path.exists():
        return _NoLog(path), config
    return (SqliteUsageStore(path) if write else _reader(path)), config


def _reader(path: Path) -> Any:
    """The log opened read-only: it can neither write, checkpoint nor delete the WAL.

    A log at an older schema (or one never migrated) is brought up to date
    first, through SQLite's write lock as ``serve`` would.
    """
    from cartograph.learning.sqlite import SCHEMA_VERSION, SqliteUsageStore

    store = SqliteUsageStore(path, read_only=True)
    if store.schema_version == SCHEMA_VERSION:
        return store
    store.close()
    return SqliteUsageStore(path)


class _NoLog:
    """An absent log: empty, and nothing to forget or export."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def status(self) -> Any:
        from cartograph.learning.store import UsageStatus

        return UsageStatus(str(self.path), 0, 0, 0, {}, {}, {}, None, None, 0)

    def forget(self, **_: Any) -> int:
        return 0

    def export(self, **_: Any) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        return None


@learning_app.command("status")
def status(config: ConfigOption = None, json_out: JsonOption = False) -> None:
    """Where the log is, how much it holds, call outcomes per kind, retention."""
    store, cfg = _store(config)
    try:
        report = store.status()
    finally:
        store.close()
    data = {
        "enabled": cfg.learning.enabled,
        "location": report.location,
        "schema_version": report.schema_version,
        "tasks": report.tasks,
        "calls": report.calls,
        "outcomes": report.outcomes,
        "catalogs": report.catalogs,
        "principals": report.principals,
        "oldest": _iso(report.oldest),
        "newest": _iso(report.newest),
        "size_bytes": report.size_bytes,
        "retention": {
            "max_tasks": cfg.learning.max_tasks,
            "max_age_days": cfg.learning.max_age_days,
            "max_calls_per_task": cfg.learning.max_calls_per_task,
            "max_evidence_per_minute": cfg.learning.max_evidence_per_minute,
        },
        "min_principals": cfg.learning.min_principals,
    }
    if json_out:
        print_json(data)
        return
    rows = [
        ("enabled", data["enabled"]),
        ("location", data["location"]),
        ("schema", data["schema_version"]),
        ("tasks", data["tasks"]),
        ("calls", ", ".join(f"{k} {v}" for k, v in report.outcomes.items()) or "0"),
        ("catalogs", ", ".join(f"{k} {v}" for k, v in report.catalogs.items()) or "-"),
        ("principals", _principals(report.principals)),
        ("agreement", f"{cfg.learning.min_principals} principals move shared rankings"),
        ("span", f"{data['oldest'] or '-'} … {data['newest'] or '-'}"),
        ("size", f"{report.size_bytes:,} bytes"),
        ("retention", _retention(cfg.learning)),
    ]
    print_table("learning", ["", "value"], rows)


@learning_app.command("forget")
def forget(
    before: Annotated[
        str | None,
        typer.Option(
            "--before", help="Only tasks logged before this date (YYYY-MM-DD or ISO 8601, UTC)."
        ),
    ] = None,
    catalog: CatalogNameOption = None,
    principal: PrincipalOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Delete logged tasks and their calls (all of them unless --before/--catalog/--principal)."""
    cutoff = parse_date(before) if before is not None else None
    store, _cfg = _store(config, write=True)
    try:
        deleted = store.forget(before=cutoff, catalog=catalog, principal=principal)
    finally:
        store.close()
    if json_out:
        print_json({"deleted_tasks": deleted})
        return
    stderr.print(f"forgot {deleted} task(s); a running proxy reloads at its next prune")


@learning_app.command("export")
def export(
    out: Annotated[
        Path | None, typer.Option("--out", help="Write JSON lines here (default: stdout).")
    ] = None,
    catalog: CatalogNameOption = None,
    principal: PrincipalOption = None,
    config: ConfigOption = None,
) -> None:
    """Every logged task as one JSON line: task, principal, tools surfaced, calls, outcomes."""
    import json

    store, _cfg = _store(config)
    try:
        rows = store.export(catalog=catalog, principal=principal)
        lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        if out is None:
            for line in lines:
                stdout.file.write(line)
            return
        from cartograph.fsutil import atomic_write_text

        atomic_write_text(out, "".join(lines), mode=0o600)
    finally:
        store.close()


def _retention(learning: Any) -> str:
    return (
        f"{learning.max_tasks:,} tasks per catalog, {learning.max_age_days:g} days, "
        f"{learning.max_calls_per_task:,} calls per task, "
        f"{learning.max_evidence_per_minute:,} rows per principal per minute"
    )


def _principals(principals: dict[str, dict[str, int]]) -> str:
    parts = [f"{name} {n['tasks']} tasks/{n['calls']} calls" for name, n in principals.items()]
    return ", ".join(parts) or "-"


def parse_date(text: str) -> float:
    """``YYYY-MM-DD`` or ISO 8601 (naive means UTC) as Unix seconds."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise OptionError(
            f"--before {text!r} is not a date; use YYYY-MM-DD or ISO 8601, e.g. 2026-01-31",
            code=codes.BAD_DATE,
        ) from exc
    if parsed.tzinfo is not None:
        return parsed.timestamp()
    return float(calendar.timegm(parsed.timetuple())) + parsed.microsecond / 1e6


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def eval_learning(
    catalog: Path,
    queries: Path,
    method: str | None,
    embedder: str | None,
    feedback: str,
    noise: float,
    seed: int,
    limit: int | None,
    *,
    json_out: bool,
) -> None:
    """``cartograph eval --learning``: the prequential table and the learning curve."""
    from cartograph.eval.learning import MODES, run_learning_eval

    modes = MODES if feedback == "both" else tuple(m for m in MODES if m == feedback)
    if not modes:
        raise OptionError(
            f"--feedback must be surfaced, oracle or both, not {feedback!r}",
            code=codes.BAD_FEEDBACK,
        )
    with stderr.status("replaying…") as spinner:
        report = run_learning_eval(
            catalog,
            queries,
            method=method,
            embedder=embedder,
            modes=modes,
            noise=noise,
            seed=seed,
            limit=limit,
            progress=lambda done, total: spinner.update(f"zero-shot pass {done}/{total}…"),
        )
    if json_out:
        print_json(report.model_dump())
        return
    _print_learning(report.model_dump())


def _print_learning(report: dict[str, Any]) -> None:
    from cartograph.eval.metrics import METRIC_NAMES

    title = (
        f"prequential, {report['queries']} queries, {report['tools']} tools, "
        f"{report['embedder']}, {report['method']}, seed {report['seed']}, "
        f"noise {report['noise']:.0%}"
    )
    rows = [
        [arm, *(f"{m['mean']:.3f} [{m['low']:.2f},{m['high']:.2f}]" for m in _cells(row))]
        for arm, row in report["rows"].items()
    ]
    print_table(title, ["ranking", *METRIC_NAMES], rows)
    split = [
        [
            f"{arm}, {part} ({report[part]})",
            *(f"{m['mean']:.3f} [{m['low']:.2f},{m['high']:.2f}]" for m in _cells(row)),
        ]
        for arm, parts in report.get("split", {}).items()
        for part, row in parts.items()
    ]
    if split:
        title = "new tasks (no earlier task had their gold set) and repeated tasks apart"
        print_table(title, ["ranking", *METRIC_NAMES], split)
    arms = list(report["rows"])
    names = ("R@5", "Hit@5", "MRR")
    columns = ["tasks logged", *(f"{arm} {name}" for arm in arms for name in names)]
    curve = [
        [
            f"{p['logged_from']}–{p['logged_to']}",
            *(f"{p['metrics'][arm][name]:.3f}" for arm in arms for name in names),
        ]
        for p in report["curve"]
    ]
    print_table("learning curve (mean per window of the replay)", columns, curve)


def _cells(row: dict[str, Any]) -> list[dict[str, float]]:
    from cartograph.eval.metrics import METRIC_NAMES

    return [row[name] for name in METRIC_NAMES]
