"""``cartograph servers | tools | snapshot``: the federation as the operator sees it.

``servers`` connects to every enabled upstream concurrently and reports each
one; ``tools`` lists what they serve; ``snapshot`` writes the whole
federation's ``tools/list`` as a ``catalog.json``. Every command reads
``--catalog`` instead of live servers where that makes sense. (``demo`` lives
in :mod:`cartograph.cli.demo` and hands :func:`connect_live` and
:func:`show_reports` to the demo package, which never imports the CLI.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import typer

from cartograph import error_codes as codes
from cartograph.cli.app import (
    EXIT_CHECK_FAILED,
    CatalogOption,
    ConfigOption,
    JsonOption,
    app,
    resolve_config_path,
)
from cartograph.cli.output import print_json, print_table, stderr, stdout
from cartograph.errors import OptionError

# Heavy modules (the MCP SDK, pydantic models, rich's widgets) are imported where
# they are used, so `cartograph --help` does not pay for them (issue 12).
if TYPE_CHECKING:
    from cartograph.catalog.model import Catalog
    from cartograph.config.model import Config
    from cartograph.upstream.federation import FederationResult, ServerReport


def _config(path: Path | None) -> Config:
    from cartograph.config.loader import load_config

    return load_config(resolve_config_path(path))


@contextmanager
def connect_progress(total: int) -> Iterator[Callable[[ServerReport], None]]:
    """A stderr progress bar advanced once per server; yields the federation callback."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("connecting"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=stderr, transient=True) as progress:
        task = progress.add_task("", total=total)

        def advance(report: ServerReport) -> None:
            mark = "✓" if report.status == "connected" else "✗"
            progress.update(task, advance=1, description=f"{mark} {report.name}")

        yield advance


async def connect_live(config: Config) -> FederationResult:
    """Connect to the federation with a progress bar on stderr (callers close the result)."""
    from cartograph.upstream.federation import connect_federation

    with connect_progress(len(config.enabled_servers)) as advance:
        return await connect_federation(config, progress=advance)


def federation_catalog(
    config: Config, catalog: Path | None, *, failed: list[ServerReport] | None = None
) -> Catalog:
    from rich.markup import escape

    from cartograph.upstream.federation import load_catalog_for, load_snapshot

    """The catalog a command should use: ``--catalog``, ``config.catalog``, else live servers.

    Live servers connect under a progress bar; each one that fails is named on
    stderr, because it is simply absent from the catalog (and so from a
    snapshot or a bootstrap) otherwise. ``failed``, when given, receives their
    reports, for commands whose verdict they change (``cards diff``).
    """
    snapshot = catalog or config.catalog
    if snapshot is not None:
        return load_snapshot(snapshot)
    failed = [] if failed is None else failed

    def on_report(report: ServerReport) -> None:
        advance(report)
        if report.status == "failed":
            failed.append(report)

    with connect_progress(len(config.enabled_servers)) as advance:
        found = anyio.run(partial(load_catalog_for, config, progress=on_report))
    for report in failed:
        stderr.print(f"[yellow]skipped[/] {escape(error_text(report))}", highlight=False)
    return found


def only_servers(config: Config, names: Iterable[str]) -> Config:
    """``config`` narrowed to the ``--server`` names, so nothing else is started."""
    wanted = set(names)
    refuse_unknown_servers(wanted, [s.name for s in config.servers], f"in {config.source}")
    return config.model_copy(
        update={"servers": tuple(s for s in config.servers if s.name in wanted)}
    )


def refuse_unknown_servers(names: Iterable[str], known: Iterable[str], where: str) -> None:
    """``--server`` names that are not in ``known``: refused, each with its closest match."""
    from cartograph.suggest import did_you_mean

    pool = sorted(set(known))
    unknown = sorted(set(names) - set(pool))
    if unknown:
        hints = "; ".join(
            f"{name!r}: {did_you_mean(name, pool, what='servers')}" for name in unknown
        )
        raise OptionError(
            f"--server {', '.join(unknown)}: no such server {where} ({hints})",
            code=codes.UNKNOWN_SERVER,
        )


# -- servers ---------------------------------------------------------------------------


def error_text(report: ServerReport) -> str:
    """A failed server's code and the first line of its error (the tail is on stderr)."""
    if report.error is None:
        return ""
    first_line = report.error.message.splitlines()[0]
    return f"{report.error.code}: {first_line}"


def _report_rows(reports: list[ServerReport]) -> list[list[Any]]:
    return [
        [
            r.name,
            r.transport,
            r.status,
            r.tool_count if r.status == "connected" else "",
            f"{r.connect_seconds:.2f}" if r.connect_seconds is not None else "",
            r.protocol_version or "",
            error_text(r),
        ]
        for r in reports
    ]


def show_reports(result: FederationResult, *, json_out: bool) -> None:
    if json_out:
        print_json({"servers": [r.to_dict() for r in result.reports], "summary": result.summary()})
        return
    columns = ["server", "transport", "status", "tools", "connect s", "protocol", "last error"]
    print_table("Upstream servers", columns, _report_rows(result.reports))
    s = result.summary()
    stdout.print(
        f"{s['connected']}/{s['servers']} servers connected, {s['tools']} tools, "
        f"{s['wall_seconds']:.2f}s (slowest server {s['slowest_server_seconds']:.2f}s), "
        f"tools/list {s['tools_list_bytes']} bytes",
        highlight=False,
    )


def _snapshot_reports(catalog: Catalog) -> list[dict[str, Any]]:
    return [
        {"name": s.name, "transport": s.transport, "status": "snapshot", "tool_count": len(s.tools)}
        for s in catalog.servers
    ]


@app.command()
def servers(
    config: ConfigOption = None, catalog: CatalogOption = None, json_out: JsonOption = False
) -> None:
    """Connect to every upstream: transport, status, tool count, connect time, last error."""
    from cartograph.upstream.federation import load_snapshot

    cfg = _config(config)
    snapshot = catalog or cfg.catalog
    if snapshot is not None:
        rows = _snapshot_reports(load_snapshot(snapshot))
        if json_out:
            print_json({"servers": rows})
        else:
            cols = ["server", "transport", "status", "tools"]
            print_table("Upstream servers (snapshot)", cols, [list(r.values()) for r in rows])
        return

    async def run() -> tuple[int, list[ServerReport]]:
        result = await connect_live(cfg)
        try:
            show_reports(result, json_out=json_out)
            return int(result.summary()["connected"]), list(result.failed)
        finally:
            await result.aclose()

    connected, failed = anyio.run(run)
    if not json_out:
        show_failures(failed)
    if connected == 0:
        stderr.print("[red]no server connected[/]", highlight=False)
        raise typer.Exit(EXIT_CHECK_FAILED)


def show_failures(failed: list[ServerReport]) -> None:
    """Each failing server's whole error on stderr, its stderr tail included (the table's
    ``last error`` column holds only the first line)."""
    from rich.markup import escape

    for report in failed:
        if report.error is not None and "\n" in report.error.message:
            stderr.print(f"[bold]{escape(report.name)}[/]: {escape(report.error.message)}")


# -- tools -----------------------------------------------------------------------------


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


@app.command()
def tools(
    config: ConfigOption = None,
    catalog: CatalogOption = None,
    json_out: JsonOption = False,
    server: Annotated[str | None, typer.Option("--server", "-s", help="Only this server.")] = None,
) -> None:
    """List the federation's tools (live, or from --catalog); policy-denied ones are marked."""
    cfg = _config(config)
    live = catalog is None and cfg.catalog is None
    if server is not None and live:
        cfg = only_servers(cfg, [server])
    cat = federation_catalog(cfg, catalog)
    if server is not None and not live:
        refuse_unknown_servers([server], [s.name for s in cat.servers], "in the snapshot")
    served = served_tools(cfg)
    rows = [
        (s.name, served.get((s.name, t.name), t), t.name)
        for s in cat.servers
        if server is None or s.name == server
        for t in s.tools
    ]
    denied = denied_in(cfg)
    if json_out:
        print_json(
            [
                {"server": name, **tool.definition(), "denied_in": denied(name, tool.name, up)}
                | ({"upstream": up} if up != tool.name else {})
                for name, tool, up in rows
            ]
        )
        return
    table = [
        [
            name,
            tool.name if up == tool.name else f"{tool.name} (upstream {up})",
            _policy_mark(denied(name, tool.name, up), cfg),
            _first_line(tool.description),
        ]
        for name, tool, up in rows
    ]
    print_table(f"{len(rows)} tools", ["server", "tool", "policy", "description"], table)


def served_tools(config: Config) -> dict[tuple[str, str], Any]:
    """(server, upstream tool) -> the tool as served, for each tool a verified card reshaped.

    The served definition is the card's (served name, title, operator description,
    served input schema). Without verified cards (before ``bootstrap``) there are none.
    """
    from cartograph.cards.loading import load_report_for_config
    from cartograph.catalog.model import ToolDef
    from cartograph.errors import CartographError

    try:
        cards = load_report_for_config(config).verified
    except (CartographError, OSError):
        return {}
    out: dict[tuple[str, str], Any] = {}
    for server in cards:
        for tool in cards[server].body.tools:
            if tool.transform is not None:
                out[(server, tool.upstream_name)] = ToolDef(
                    name=tool.name,
                    title=tool.transform.title,
                    description=tool.description,
                    inputSchema=tool.input_schema,
                    outputSchema=tool.output_schema,
                )
    return out


def denied_in(config: Config) -> Callable[[str, str, str], list[str]]:
    """``(server, tool, upstream)`` → the catalogs whose policy (or disabled_tools) denies it."""
    from cartograph.config.catalogs import resolve_catalogs
    from cartograph.index.serving import tool_allowed

    catalogs = resolve_catalogs(config, "per-catalog")

    def denied(server: str, tool: str, upstream: str) -> list[str]:
        return [
            c.name
            for c in catalogs
            if any(s.name == server for s in c.servers)
            and not tool_allowed(c.policy, server, {tool, upstream})
        ]

    return denied


def _policy_mark(catalogs: list[str], config: Config) -> str:
    if not catalogs:
        return ""
    return (
        "policy-denied" if len(config.catalogs) < 2 else f"policy-denied in {', '.join(catalogs)}"
    )


# -- snapshot --------------------------------------------------------------------------


@app.command()
def snapshot(
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write catalog.json.")],
    config: ConfigOption = None,
    catalog: CatalogOption = None,
    json_out: JsonOption = False,
) -> None:
    """Write the whole federation's tools/list as a catalog.json snapshot."""
    from cartograph.catalog.snapshot import save_catalog

    _refuse_missing_folder(out)
    cat = federation_catalog(_config(config), catalog)
    save_catalog(cat, out)
    info = {"out": str(out), "servers": len(cat.servers), "tools": cat.tool_count}
    if json_out:
        print_json(info)
    else:
        stdout.print(f"wrote {out}: {info['servers']} servers, {info['tools']} tools")


def _refuse_missing_folder(out: Path) -> None:
    """Before connecting: a mistyped ``--out`` folder is refused, not silently created."""
    if not out.parent.is_dir():
        raise OptionError(
            f"--out {out}: the folder {out.parent} does not exist; create it first",
            code=codes.OUT_DIR_MISSING,
        )
