"""``cartograph stubs``: a typed Python package from verified cards."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import anyio
import typer

from cartograph.cli.app import (
    ConfigOption,
    JsonOption,
    SnapshotOption,
    app,
    load_config_or_defaults,
)
from cartograph.cli.output import print_json, print_table, stderr
from cartograph.cli.serve import THROWAWAY, UnsafeThrowawayKeyOption

if TYPE_CHECKING:
    from cartograph.stubs.generate import StubPackage

# ``cartograph.stubs.generate.DEFAULT_PACKAGE``, written out so `--help` need not import the
# generator (and the card models behind it); tests/stubs pins that the two agree.
DEFAULT_PACKAGE: Final = "cartograph_stubs"


@app.command()
def stubs(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the package into.")],
    server: Annotated[
        list[str] | None, typer.Option("--server", help="Only this server (repeatable).")
    ] = None,
    package: Annotated[
        str, typer.Option("--package", help="Name of the generated package.")
    ] = DEFAULT_PACKAGE,
    only_discovered: Annotated[
        str | None,
        typer.Option("--only-discovered", help="Only the top-k tools `discover` finds for TASK."),
    ] = None,
    k: Annotated[
        int, typer.Option("-k", help="How many tools --only-discovered keeps.", min=1)
    ] = 5,
    config: ConfigOption = None,
    catalog: SnapshotOption = None,
    unsafe_throwaway_key: UnsafeThrowawayKeyOption = False,
    json_out: JsonOption = False,
) -> None:
    """Typed Python stubs: a module per server, a function per tool, calling `cartograph serve`."""
    from cartograph.stubs.generate import generate_stubs, write_stubs
    from cartograph.stubs.source import discovered, load_stub_source

    if unsafe_throwaway_key:
        stderr.print(f"[yellow]{THROWAWAY}[/]", highlight=False)
    cfg = load_config_or_defaults(config)
    started = time.perf_counter()
    with stderr.status("loading verified cards…") as status:
        source = anyio.run(
            lambda: load_stub_source(
                cfg,
                catalog,
                notify=lambda m: status.update(m),
                unsafe_throwaway_key=unsafe_throwaway_key,
            )
        )
        only = None
        if only_discovered is not None:
            status.update("discovering…")
            result = discovered(source, cfg, only_discovered, k)
            if result.abstained and result.hint:
                stderr.print(f"[yellow]{result.hint}[/]", highlight=False)
            only = {(t.server, t.tool) for t in result.tools}
        status.update("generating…")
        generated = generate_stubs(
            source.cards, servers=server or None, only=only, drift=source.drift, package=package
        )
        target = write_stubs(generated, out)
    seconds = time.perf_counter() - started
    if json_out:
        print_json(_summary(generated, target, source.origin, seconds))
        return
    _print(generated, target, source.origin, seconds)


def _summary(generated: StubPackage, target: Path, origin: str, seconds: float) -> dict[str, Any]:
    return {
        "package": generated.name,
        "path": str(target),
        "cards": origin,
        "tools": generated.tool_count,
        "seconds": round(seconds, 3),
        "modules": [
            {
                "module": m.module,
                "server": m.server,
                "card_version": m.card_version,
                "signer": m.signer,
                "tools": [{"function": t.function, "tool": t.tool} for t in m.tools],
            }
            for m in generated.modules
        ],
        "withheld": [
            {"server": s.server, "tool": s.tool, "reason": s.reason} for s in generated.skipped
        ],
    }


def _print(generated: StubPackage, target: Path, origin: str, seconds: float) -> None:
    rows = [
        (m.module, m.server, len(m.tools), m.card_version, m.signer[:16]) for m in generated.modules
    ]
    title = f"{generated.tool_count} stubs in {target} from {origin} ({seconds:.2f}s)"
    print_table(title, ["module", "server", "tools", "card", "signer"], rows)
    for s in generated.skipped:
        stderr.print(f"[yellow]withheld[/] {s.server}/{s.tool}: {s.reason}", highlight=False)
