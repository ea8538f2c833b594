"""`serve`, `call`, `status`, `connect`: running the proxy and wiring clients to it."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import anyio
import typer

from cartograph import error_codes as codes
from cartograph import startup_gc
from cartograph.cli.app import (
    EXIT_CHECK_FAILED,
    ConfigOption,
    DebugOption,
    JsonOption,
    LogFormatOption,
    app,
    resolve_config_path,
)
from cartograph.cli.logs import META_KEY, LogChoice, apply, chosen
from cartograph.cli.output import print_json, print_table, stderr, stdout, working
from cartograph.errors import OptionError

# The config models, the MCP SDK and the runtime load inside the commands: `--help` stays fast.
if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from cartograph.config.catalogs import ResolvedCatalog
    from cartograph.config.model import Config
    from cartograph.server.runtime.catalog import CatalogRuntime
    from cartograph.telemetry.tracing import Tracing

ModeOption = Annotated[
    str | None,
    typer.Option("--mode", help="Gateway mode: pooled (default) or oneshot."),
]
UnsafeThrowawayKeyOption = Annotated[
    bool,
    typer.Option(
        "--unsafe-throwaway-key",
        help="Sign the live federation (or --catalog) with a throwaway key instead of loading "
        "the operator's cards: output is unsigned (for trying things out; never production).",
    ),
]
THROWAWAY: Final = (
    "unsigned: cards signed in memory with a throwaway key (--unsafe-throwaway-key), "
    "not the operator's; for trying things out only"
)
"""What every command run with --unsafe-throwaway-key says on stderr (never silently)."""
CatalogNameOption = Annotated[
    str | None, typer.Option("--catalog-name", help="Which configured catalog to serve on stdio.")
]


def _load(config_path: Path | None, mode: str | None = None) -> Config:
    from cartograph.config.loader import load_config

    config = load_config(resolve_config_path(config_path))
    if mode is not None:
        if mode not in ("pooled", "oneshot"):
            raise OptionError(
                f"--mode {mode!r}: use pooled or oneshot", code=codes.BAD_GATEWAY_MODE
            )
        gateway = config.gateway.model_copy(update={"mode": mode})
        config = config.model_copy(update={"gateway": gateway})
    return config


def pick_catalog(config: Config, name: str | None) -> ResolvedCatalog:
    """The configured catalog called ``name``; required when two or more are configured.

    Taking the first one silently is the implicit default docs/decisions/0001 rules out:
    the routed HTTP mount requires ``catalog`` for the same reason.
    """
    from cartograph.config.catalogs import resolve_catalogs
    from cartograph.suggest import did_you_mean

    catalogs = resolve_catalogs(config, "per-catalog")
    known = [c.name for c in catalogs]
    if name is None:
        if len(catalogs) == 1:
            return catalogs[0]
        raise OptionError(
            f"{len(catalogs)} catalogs are configured ({', '.join(known)}); "
            "choose one with --catalog-name NAME",
            code=codes.CATALOG_NAME_REQUIRED,
            catalogs=known,
        )
    for catalog in catalogs:
        if catalog.name == name:
            return catalog
    raise OptionError(
        f"no catalog named {name!r}; {did_you_mean(name, known, what='configured')}",
        code=codes.UNKNOWN_CATALOG,
    )


def check_server_in(catalog: ResolvedCatalog, server: str) -> None:
    """Refuse an unknown server before anything starts, suggesting close names."""
    from cartograph.suggest import did_you_mean

    members = [s.name for s in catalog.servers]
    if server not in members:
        hint = did_you_mean(server, members, what=f"servers in catalog {catalog.name!r}")
        raise OptionError(
            f"no server {server!r} in catalog {catalog.name!r}; {hint}",
            code=codes.UNKNOWN_SERVER,
            server=server,
        )


async def start_runtime(
    config: Config,
    catalog: ResolvedCatalog,
    *,
    unsafe_throwaway_key: bool = False,
    share_sessions: bool = False,
    servers: tuple[str, ...] | None = None,
    connect_later: bool = False,
) -> CatalogRuntime:
    """A started :class:`CatalogRuntime` for ``catalog`` (optionally only some servers).

    ``connect_later``: return once cards and index are loaded; the caller runs
    ``runtime.connect_upstreams()`` in the background (``serve`` does).
    """
    from cartograph.server.runtime.catalog import CatalogRuntime

    members = tuple(s for s in catalog.servers if servers is None or s.name in servers)
    return await CatalogRuntime.start(
        config,
        members,
        name=catalog.name,
        policy=catalog.policy,
        share_sessions=share_sessions,
        unsafe_throwaway_key=unsafe_throwaway_key,
        connect_later=connect_later,
    )


def _serve_logging(
    ctx: typer.Context, own: LogChoice, config_path: Path | None, mode: str | None
) -> Config:
    """Logging for ``serve``: its own options over the root's over ``[logging] format``.

    Set up before the config loads (so loading logs), again after when only the
    config names the format; the config returned carries the format in force.
    """
    choice = own.over(chosen(ctx.meta))
    effective = apply(choice)
    config = _load(config_path, mode)
    if choice.format is None and config.logging.format != "text":
        effective = apply(choice, fallback=config.logging.format)
    ctx.meta[META_KEY] = effective  # the closing error line follows the format in force
    assert effective.format is not None
    settings = config.logging.model_copy(update={"format": effective.format.value})
    return config.model_copy(update={"logging": settings})


def _start_tracing(config: Config) -> Tracing | None:
    """Tracing as ``[telemetry]`` and the standard OTEL_* variables ask (None: off)."""
    import os

    from cartograph.telemetry.tracing import disabled, start_tracing

    settings = config.telemetry
    if not settings.traces or disabled(os.environ):
        return None
    return start_tracing(
        endpoint=settings.endpoint,
        service_name=settings.service_name,
        sample_ratio=settings.sample_ratio,
        timeout=settings.export_timeout,
        environ=os.environ,
    )


@app.command()
def serve(
    ctx: typer.Context,
    config_path: ConfigOption = None,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP, not stdio.")] = False,
    host: Annotated[str | None, typer.Option(help="HTTP bind address (default 127.0.0.1).")] = None,
    port: Annotated[
        int | None, typer.Option(help="HTTP port (0: any free port).", min=0, max=65535)
    ] = None,
    mount_mode: Annotated[
        str | None, typer.Option("--mount-mode", help="HTTP: per-catalog or routed.")
    ] = None,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="HTTP: allow a non-loopback bind (needs auth).")
    ] = False,
    mode: ModeOption = None,
    catalog_name: CatalogNameOption = None,
    unsafe_throwaway_key: UnsafeThrowawayKeyOption = False,
    debug: DebugOption = False,
    state_dir: Annotated[
        Path | None, typer.Option("--state-dir", help="State directory (default: the config's).")
    ] = None,
    log_format: LogFormatOption = None,
) -> None:
    """Serve the proxy's three tools (discover, status, call) over stdio or HTTP.

    ``--debug``/``--log-format`` are also root options (``cartograph --debug serve``);
    given here they win.
    """
    with startup_gc.paused():  # until the runtime is up (startup_gc.py)
        own = LogChoice(debug=debug, format=log_format)
        config = _serve_logging(ctx, own, config_path, mode)
        if state_dir is not None:
            config = config.model_copy(update={"state_dir": state_dir})
        tracing = _start_tracing(config)
        try:
            _serve(
                config,
                http,
                host,
                port,
                mount_mode,
                allow_remote,
                catalog_name,
                unsafe_throwaway_key,
            )
        finally:
            if tracing is not None:
                tracing.shutdown()  # flush the spans still batched


def _serve(
    config: Config,
    http: bool,
    host: str | None,
    port: int | None,
    mount_mode: str | None,
    allow_remote: bool,
    catalog_name: str | None,
    unsafe_throwaway_key: bool,
) -> None:
    if http:
        from cartograph.server.http import serve_http

        startup_gc.resume()  # each mount starts its runtime inside the server's loop
        serve_http(
            config,
            host=host,
            port=port,
            mount_mode=mount_mode,
            allow_remote=allow_remote,
            unsafe_throwaway_key=unsafe_throwaway_key,
            on_ready=announce_json if config.logging.format == "json" else announce_url,
        )
        return
    from cartograph.server.stdio.serve import serve_stdio

    catalog = pick_catalog(config, catalog_name)

    async def start() -> CatalogRuntime:
        try:
            return await start_runtime(
                config,
                catalog,
                unsafe_throwaway_key=unsafe_throwaway_key,
                share_sessions=True,
                connect_later=True,
            )
        finally:
            startup_gc.resume()  # cards and index are in: what is built from here on is work

    anyio.run(serve_stdio, catalog, start)


def announce_url(base: str) -> None:
    """Say where the server listens (on stderr, so stdout stays free for a script)."""
    stderr.print(
        f"cartograph serving on {base} (GET {base}/health lists the catalog endpoints; "
        f"connect a client with `cartograph connect --url {base} --client CLIENT`)",
        highlight=False,
        soft_wrap=True,
    )


def announce_json(base: str) -> None:
    """:func:`announce_url` as a JSON log line, whatever the level (every stderr line parses)."""
    from cartograph.telemetry.logs import emit

    emit(logging.getLogger("cartograph.serve"), logging.INFO, f"cartograph serving on {base}")


@app.command("call")
def call_command(
    server: Annotated[str, typer.Argument(help="Upstream server name.")],
    tool: Annotated[str, typer.Argument(help="Tool name on that server.")],
    arguments: Annotated[str, typer.Argument(help="Arguments as a JSON object.")] = "{}",
    config_path: ConfigOption = None,
    mode: ModeOption = None,
    catalog_name: CatalogNameOption = None,
    unsafe_throwaway_key: UnsafeThrowawayKeyOption = False,
    as_json: JsonOption = False,
) -> None:
    """Call one upstream tool through the gateway (same checks as the proxy's `call`)."""
    if unsafe_throwaway_key:
        stderr.print(f"[yellow]{THROWAWAY}[/]", highlight=False)
    config = _load(config_path, mode)
    catalog = pick_catalog(config, catalog_name)
    check_server_in(catalog, server)
    result = anyio.run(_call_once, config, catalog, server, tool, arguments, unsafe_throwaway_key)
    if as_json:
        print_json(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    else:
        for block in result.content:
            text = getattr(block, "text", None)
            stdout.print(text if text is not None else block.model_dump_json(), highlight=False)
    if result.is_error:
        raise typer.Exit(EXIT_CHECK_FAILED)


async def _call_once(
    config: Config,
    catalog: ResolvedCatalog,
    server: str,
    tool: str,
    raw_arguments: str,
    unsafe_throwaway_key: bool,
) -> CallToolResult:
    from cartograph.server.handlers import ProxyHandlers

    try:
        parsed = json.loads(raw_arguments)
    except json.JSONDecodeError as exc:
        raise OptionError(f"arguments are not JSON: {exc}", code=codes.BAD_ARGUMENTS) from exc
    runtime = await start_runtime(
        config,
        catalog,
        unsafe_throwaway_key=unsafe_throwaway_key,
        servers=(server,),
        share_sessions=True,
    )
    try:
        handlers = ProxyHandlers(runtime, catalog=catalog.name, policy=catalog.policy)
        return await handlers.call_tool(
            "call", {"server": server, "tool": tool, "arguments": parsed}, principal=None
        )
    finally:
        await runtime.aclose()


@app.command()
def status(
    config_path: ConfigOption = None,
    catalog_name: CatalogNameOption = None,
    unsafe_throwaway_key: UnsafeThrowawayKeyOption = False,
    detail: Annotated[
        bool, typer.Option("--detail", help="Every server (default: totals and problems).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Connect to the federation and report what the proxy's `status` tool would."""
    from cartograph.server.status_view import compact_status

    if unsafe_throwaway_key:
        stderr.print(f"[yellow]{THROWAWAY}[/]", highlight=False)
    config = _load(config_path)
    catalog = pick_catalog(config, catalog_name)
    with working(f"connecting {len(catalog.servers)} servers of catalog {catalog.name}"):
        report = anyio.run(_status_once, config, catalog, unsafe_throwaway_key)
    if not detail:
        view = compact_status(report)
        if as_json:
            print_json(view)
        else:
            _print_compact(view)
        return
    if as_json:
        print_json(report)
        return
    rows = [
        (
            s["name"],
            s["health"],
            s["tools"]["servable"],
            s["tools"]["attested"],
            len(s["drifted"]),
            len(s["unattested"]),
            (s["card"] or {}).get("version"),
            ((s["card"] or {}).get("signer") or "")[:12],
            s["restarts"],
            (s["last_error"] or "")[:60],
        )
        for s in report["servers"]
    ]
    columns = (
        "server", "health", "servable", "attested", "drifted", "unattested",
        "card v", "signer", "restarts", "last error",
    )  # fmt: skip
    print_table(f"catalog {report['catalog']} ({report['mode']})", columns, rows)


def _print_compact(view: dict[str, Any]) -> None:
    totals = view["totals"]
    stdout.print(
        f"catalog {view['catalog']} ({view['mode']}): {totals['healthy']}/{totals['servers']} "
        f"servers up, {totals['tools_servable']} tools servable, {totals['tools_drifted']} "
        f"drifted, {totals['tools_unattested']} unattested",
        highlight=False,
    )
    for problem in view["problems"]:
        rest = {k: v for k, v in problem.items() if k != "server"}
        stdout.print(f"- {problem['server']}: {json.dumps(rest, ensure_ascii=False)}", markup=False)
    if not view["problems"]:
        stdout.print("no problems (--detail lists every server)", highlight=False)


async def _status_once(config: Config, catalog: ResolvedCatalog, attest: bool) -> dict[str, Any]:
    runtime = await start_runtime(config, catalog, unsafe_throwaway_key=attest, share_sessions=True)
    try:
        report: dict[str, Any] = runtime.status()
        return report
    finally:
        await runtime.aclose()
