"""`cartograph run`: a code-mode program against the federation, from the terminal.

The program runs exactly as an agent's ``run`` does (docs/code-mode.md): the
same sandbox and limits (the catalog's ``[code_mode]``), the same policy and
write gate, each inner call through the proxy's call entry, and one audit
record per inner call plus one for the run, all carrying the run's id. Code
mode need not be enabled in the file for the operator to try a program here;
stderr says when it is not.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import typer

from cartograph import error_codes as codes
from cartograph.cli.app import EXIT_CHECK_FAILED, ConfigOption, JsonOption, app, resolve_config_path
from cartograph.cli.output import print_json, stderr, stdout
from cartograph.cli.serve import (
    THROWAWAY,
    CatalogNameOption,
    UnsafeThrowawayKeyOption,
    pick_catalog,
    start_runtime,
)
from cartograph.errors import OptionError

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from cartograph.config.catalogs import ResolvedCatalog
    from cartograph.config.model import Config


@app.command("run")
def run_command(
    program: Annotated[
        Path | None, typer.Argument(help="The program, a Python file ('-' reads stdin).")
    ] = None,
    code: Annotated[
        str | None,
        typer.Option("--code", help="The program as a string instead (-c is --config here)."),
    ] = None,
    inputs: Annotated[
        str | None,
        typer.Option("--inputs", help='A JSON object the program reads as inputs["name"].'),
    ] = None,
    config_path: ConfigOption = None,
    catalog_name: CatalogNameOption = None,
    unsafe_throwaway_key: UnsafeThrowawayKeyOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run a code-mode program against the catalog (same sandbox, policy and audit as `run`)."""
    from cartograph.config.loader import load_config

    source = read_program(program, code)
    given = parse_inputs(inputs)
    if unsafe_throwaway_key:
        stderr.print(f"[yellow]{THROWAWAY}[/]", highlight=False)
    config = load_config(resolve_config_path(config_path))
    catalog = pick_catalog(config, catalog_name)
    if not config.code_mode_for(catalog.name).enabled:
        stderr.print(
            f"code mode is off for catalog {catalog.name!r} ([code_mode] enabled = false): "
            "running here with its limits; agents do not get `run` until it is on",
            highlight=False,
            markup=False,
        )
    result = anyio.run(_run_once, config, catalog, source, given, unsafe_throwaway_key)
    show(result, as_json=as_json)
    if result.is_error:
        raise typer.Exit(EXIT_CHECK_FAILED)


def read_program(path: Path | None, code: str | None) -> str:
    """The program from exactly one of FILE, ``-`` (stdin) or ``--code``."""
    if (path is None) == (code is None):
        raise OptionError(
            "give the program as FILE or with --code CODE (one of them)", code=codes.BAD_OPTION
        )
    if code is not None:
        return code
    assert path is not None
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OptionError(f"cannot read the program {path}: {exc}", code=codes.BAD_OPTION) from exc


def parse_inputs(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(f"--inputs is not JSON: {exc}", code=codes.BAD_OPTION) from exc
    if not isinstance(parsed, dict):
        raise OptionError("--inputs is a JSON object", code=codes.BAD_OPTION)
    return parsed


async def _run_once(
    config: Config,
    catalog: ResolvedCatalog,
    source: str,
    inputs: dict[str, Any] | None,
    unsafe_throwaway_key: bool,
) -> CallToolResult:
    from cartograph.server.handlers import ProxyHandlers

    settings = config.code_mode_for(catalog.name).model_copy(update={"enabled": True})
    config = config.model_copy(
        update={"code_mode": settings, "catalogs": _without_own_code_mode(config, catalog.name)}
    )
    runtime = await start_runtime(
        config, catalog, unsafe_throwaway_key=unsafe_throwaway_key, share_sessions=True
    )
    handlers = ProxyHandlers(runtime, catalog=catalog.name, policy=catalog.policy)
    try:
        arguments: dict[str, Any] = {"code": source}
        if inputs is not None:
            arguments["inputs"] = inputs
        return await handlers.call_tool(
            f"{catalog.tool_prefix or ''}run", arguments, principal=None
        )
    finally:
        await handlers.close_upstreams()
        await runtime.aclose()


def _without_own_code_mode(config: Config, name: str) -> tuple[Any, ...]:
    """The catalogs, the one run here reading the top-level ``[code_mode]`` just set."""
    return tuple(
        c.model_copy(update={"code_mode": None}) if c.name == name else c for c in config.catalogs
    )


def show(result: CallToolResult, *, as_json: bool) -> None:
    """Printed output and the value on stdout; the run's id and call log on stderr."""
    data = result.structured_content if isinstance(result.structured_content, dict) else {}
    if as_json:
        print_json(data or result.model_dump(mode="json", by_alias=True, exclude_none=True))
        return
    if "run" not in data:  # refused before it ran (bad code or inputs)
        stderr.print("".join(getattr(b, "text", "") for b in result.content), highlight=False)
        return
    if data.get("printed"):
        stdout.out(data["printed"], end="", highlight=False)
    if "error" not in data and data.get("value") is not None:
        stdout.out(json.dumps(data["value"], ensure_ascii=False), highlight=False)
    for line in data.get("calls", []):
        stderr.print(f"  {line}", style="dim", highlight=False, markup=False)
    stderr.print(f"run {data['run']} ({data.get('ms', 0):.0f} ms)", style="dim", highlight=False)
    error = data.get("error")
    if isinstance(error, dict):
        stderr.print(f"error ({error.get('code')}): {error.get('message')}", markup=False)
