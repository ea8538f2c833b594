"""``cartograph rift``: confusable-cluster analysis, its reports and its CI gate.

Exit codes: 0 when the gate passes (or no gate was asked for), 1 when
``--fail-on`` finds clusters at or above the named risk (they are printed on
stderr); errors exit with the codes of docs/errors.md (2 for a bad option).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import anyio
import typer

from cartograph.cli.app import (
    EXIT_CHECK_FAILED,
    ConfigOption,
    EmbedderOption,
    JsonOption,
    SnapshotOption,
    app,
    load_config_or_defaults,
)
from cartograph.cli.output import print_json, print_table, stderr, stdout
from cartograph.cli.serve import THROWAWAY, UnsafeThrowawayKeyOption
from cartograph.errors import OptionError

# Models and rich's widgets load where they are used: `--help` stays fast.
if TYPE_CHECKING:
    from pydantic import ValidationError
    from rich.progress import Progress

    from cartograph.config.model import Config
    from cartograph.rift.model import RiftReport, Risk

EXIT_GATE_FAILED: Final = EXIT_CHECK_FAILED

_FLAGS: Final = {
    "theta_sim": "--theta",
    "high": "--high",
    "medium": "--medium",
    "cosine_tau": "--tau",
    "jaccard_j": "--jaccard",
}
"""The option that sets each RiftSettings field, for one-line option errors."""


class FailOn(StrEnum):
    high = "high"
    medium = "medium"


class TextChoice(StrEnum):
    description = "description"
    indexed = "index"  # not `index`: that name is str.index


class ProbeChoice(StrEnum):
    distinguishing = "distinguishing"
    arguments = "arguments"
    name_arguments = "name+arguments"


class LinkageChoice(StrEnum):
    complete = "complete"
    average = "average"
    single = "single"


@app.command()
def rift(
    config: ConfigOption = None,
    catalog: SnapshotOption = None,
    unsafe_throwaway_key: UnsafeThrowawayKeyOption = False,
    json_out: JsonOption = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print Markdown.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML report here.")
    ] = None,
    fail_on: Annotated[
        FailOn | None,
        typer.Option("--fail-on", help="CI gate: exit 1 if clusters of this risk or worse exist."),
    ] = None,
    no_margin: Annotated[
        bool, typer.Option("--no-margin", help="Ablation: Layer 1 only, no risk labels.")
    ] = False,
    regenerate: Annotated[
        bool,
        typer.Option("--regenerate", help="Rewrite and re-sign REGENERATE tools' cards."),
    ] = False,
    theta: Annotated[
        float | None, typer.Option("--theta", help="θ_sim for clustering (default 0.65).")
    ] = None,
    high: Annotated[float | None, typer.Option("--high", help="HIGH below this margin.")] = None,
    medium: Annotated[
        float | None, typer.Option("--medium", help="MEDIUM below this margin.")
    ] = None,
    linkage: Annotated[
        LinkageChoice | None, typer.Option("--linkage", help="Agglomerative linkage.")
    ] = None,
    tau: Annotated[
        float | None, typer.Option("--tau", help="Cosine baseline threshold (default 0.65).")
    ] = None,
    jaccard: Annotated[
        float | None, typer.Option("--jaccard", help="Jaccard baseline threshold (default 0.25).")
    ] = None,
    text: Annotated[
        TextChoice | None,
        typer.Option("--text", help="Embed the tool description (paper) or the index text."),
    ] = None,
    probe: Annotated[
        ProbeChoice | None,
        typer.Option(
            "--probe",
            help="Layer 2 probes: distinguishing (default: arguments, plus names for pairs "
            "whose arguments tie), arguments (the paper exactly) or name+arguments.",
        ),
    ] = None,
    embedder: EmbedderOption = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Baseline file: recorded when missing; with --fail-on, fail only on clusters "
            "that are new or whose risk rose since it.",
        ),
    ] = None,
    update_baseline: Annotated[
        bool, typer.Option("--update-baseline", help="Rewrite --baseline with today's clusters.")
    ] = False,
    paper: Annotated[
        bool,
        typer.Option(
            "--paper",
            help="The paper's settings exactly: argument probes, HIGH<0.10, MEDIUM<0.20, "
            "no action or duplicate-server rules (other flags still override).",
        ),
    ] = False,
) -> None:
    """Find tools retrieval cannot tell apart, rate them, and say what to change."""
    from pydantic import ValidationError

    from cartograph.rift.runner import load_cards, run_rift, settings_for

    if update_baseline and baseline is None:
        raise OptionError("--update-baseline needs --baseline FILE")
    cfg = load_config_or_defaults(config)
    try:
        settings = settings_for(
            cfg,
            theta_sim=theta,
            high=high,
            medium=medium,
            linkage=linkage.value if linkage else None,
            cosine_tau=tau,
            jaccard_j=jaccard,
            margin=False if no_margin else None,
            probe=probe.value if probe else None,
            paper=paper,
        )
    except ValidationError as exc:
        raise _option_error(exc) from None
    if unsafe_throwaway_key:
        stderr.print(f"[yellow]{THROWAWAY}[/]", highlight=False)
    source = anyio.run(lambda: load_cards(cfg, catalog, unsafe_throwaway_key=unsafe_throwaway_key))
    state_dir = cfg.state_dir if cfg.source is not None else None
    with _progress() as bar:
        task = bar.add_task("embedding card text", total=None)
        report = run_rift(
            source.cards,
            settings,
            embedder=embedder or cfg.index.embedder,
            text="index" if (text.value if text else cfg.rift.text) == "index" else "description",
            state_dir=state_dir,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            exclude=source.exclude,
        )
    _emit(report, source.origin, json_out=json_out, markdown=markdown)
    if html is not None:
        from cartograph.rift.html import write_html

        write_html(report, html)
        stderr.print(f"HTML report written to {html}", highlight=False)
    if regenerate:
        _regenerate(cfg, report)
    if baseline is not None:
        _baseline_gate(report, baseline, fail_on, update=update_baseline)
    elif fail_on is not None:
        _gate(report, fail_on)


def _option_error(exc: ValidationError) -> OptionError:
    """One line naming the flag (or the config's ``[rift]`` key) and what is wrong."""
    from cartograph.validation import TOP_LEVEL, first_problem

    problem = first_problem(exc)
    where = _FLAGS.get(problem.key, f"[rift] {problem.key}")
    if problem.key == TOP_LEVEL:
        return OptionError(f"rift settings: {problem.message}")
    return OptionError(f"{where}: {problem.message}")


def _progress() -> Progress:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=stderr,
        transient=True,
    )


def _emit(report: RiftReport, origin: str, *, json_out: bool, markdown: bool) -> None:
    from cartograph.rift import render

    if json_out:
        body = render.to_json(report)
        body["cards"] = origin
        print_json(body)
        return
    if markdown:
        stdout.out(render.to_markdown(report), end="", highlight=False)
        return
    stdout.print(render.headline(report), highlight=False)
    stdout.print(f"cards: {origin}", style="dim", highlight=False)
    if report.clusters:
        rows = [render.short_cluster_row(c) for c in report.clusters]
        print_table("Confusable clusters", render.SHORT_CLUSTER_COLUMNS, rows)
    for line in render.gate_lines(report.at_least("MEDIUM")):
        stdout.print(line, highlight=False, markup=False)
    for line in render.duplicate_lines(report):
        stdout.print(line, highlight=False, markup=False)
    columns, rows = render.comparison_table(report)
    print_table("Ablation and baselines", columns, rows)
    _emit_names(report)


def _emit_names(report: RiftReport) -> None:
    from cartograph.rift import render

    risky = [n for n in report.names if n.kind != "same-name" or n.nameless]
    if risky:
        print_table("Name confusables", render.NAME_COLUMNS, [render.name_row(n) for n in risky])
    repeated = len(report.names) - len(risky)
    if repeated:
        stdout.print(
            f"{repeated} tool names repeat verbatim across servers (--json lists them).",
            highlight=False,
        )


def _gate(report: RiftReport, level: FailOn) -> None:
    offending = report.at_least("HIGH" if level is FailOn.high else "MEDIUM")
    if not offending:
        stderr.print(f"rift gate passed: no {level.value.upper()}-or-worse clusters.")
        return
    from cartograph.rift.render import gate_lines

    stderr.print(
        f"rift gate failed: {len(offending)} cluster(s) at {level.value.upper()} risk or worse",
        style="bold red",
        highlight=False,
    )
    for line in gate_lines(offending):
        stderr.print(line, highlight=False, markup=False)
    raise typer.Exit(EXIT_GATE_FAILED)


def _baseline_gate(report: RiftReport, path: Path, level: FailOn | None, *, update: bool) -> None:
    """Record the baseline (missing or --update-baseline), else gate on what is new since it."""
    from cartograph.rift.gate import compare, load_baseline, write_baseline
    from cartograph.rift.render import detail_lines

    if update or not path.exists():
        recorded = write_baseline(report, path)
        verb = "updated" if update else "recorded"
        stderr.print(
            f"rift baseline {verb}: {len(recorded.clusters)} cluster(s) in {path}", highlight=False
        )
        return
    gate_level: Risk = "LOW"
    if level is not None:
        gate_level = "HIGH" if level is FailOn.high else "MEDIUM"
    findings = compare(report, load_baseline(path), gate_level)
    if not findings:
        stderr.print(f"rift gate passed: nothing new or riskier than the baseline {path}.")
        return
    failing = level is not None
    style = "bold red" if failing else "yellow"
    head = "rift gate failed" if failing else "rift: since the baseline"
    stderr.print(f"{head}: {len(findings)} cluster(s)", style=style, highlight=False)
    for f in findings:
        stderr.print(f"  {f.line()}", highlight=False, markup=False)
        for line in detail_lines(f.cluster)[1:]:
            stderr.print(f"  {line}", highlight=False, markup=False)
    stderr.print(
        f"accept them with: cartograph rift --baseline {path} --update-baseline",
        highlight=False,
        markup=False,
    )
    if failing:
        raise typer.Exit(EXIT_GATE_FAILED)


def _regenerate(config: Config, report: RiftReport) -> None:
    from cartograph.rift.regenerate import regenerate_tools

    outcome = regenerate_tools(config, report)
    for line in outcome.lines():
        stderr.print(line, highlight=False, markup=False)
