"""``cartograph discover`` and ``cartograph eval``: retrieval from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from cartograph.cli.app import CatalogOption, ConfigOption, JsonOption, app, resolve_config_path
from cartograph.cli.output import print_json, print_table, stderr, stdout
from cartograph.errors import ConfigError

MethodOption = Annotated[
    str | None,
    typer.Option("--method", "-m", help="Ranker: hybrid, two-stage, dense, bm25, jaccard, random."),
]
EmbedderOption = Annotated[
    str | None, typer.Option("--embedder", help="Embedder (default: config or minilm).")
]


@app.command()
def discover(
    task: Annotated[str, typer.Argument(help="The task, in plain words.")],
    k: Annotated[int, typer.Option("-k", help="How many tools to return.")] = 5,
    method: MethodOption = None,
    embedder: EmbedderOption = None,
    config: ConfigOption = None,
    catalog: CatalogOption = None,
    json_out: JsonOption = False,
) -> None:
    """The top-k verified tools for TASK, with schema, example and provenance."""
    from cartograph.index.discover import discover as run_discover

    index, cards = _index_for(config, catalog, embedder, method)
    result = run_discover(index, cards, task, k=k, method=method)
    if json_out:
        print_json(result.model_dump())
        return
    if result.abstained:
        stderr.print(f"[yellow]{result.hint}[/]", highlight=False)
    rows = [
        (i, t.server, t.tool, f"{t.score:.3f}", t.description[:90], f"v{t.provenance.card_version}")
        for i, t in enumerate(result.tools, start=1)
    ]
    print_table(
        f"discover ({result.method}, confidence {result.confidence:.2f})",
        ["#", "server", "tool", "score", "description", "card"],
        rows,
    )


@app.command("eval")
def eval_command(
    queries: Annotated[Path, typer.Option("--queries", help="queries.jsonl (bench format).")],
    catalog: CatalogOption = None,
    method: MethodOption = None,
    cards_dir: Annotated[
        Path | None,
        typer.Option("--cards", help="Also rank over the signed cards in this folder."),
    ] = None,
    trust: Annotated[
        Path | None, typer.Option("--trust", help="Trust file for --cards (default: config).")
    ] = None,
    embedder: EmbedderOption = None,
    no_raw: Annotated[
        bool, typer.Option("--no-raw", help="Skip the raw publisher-text baseline.")
    ] = False,
    failures: Annotated[
        bool, typer.Option("--failures", help="List per-query failures (best ranker).")
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Every ranker over template cards (and raw text, and --cards) with 95 % intervals."""
    from cartograph.eval.run import run_eval

    if catalog is None:
        raise ConfigError("eval needs --catalog catalog.json", code="eval_needs_catalog")
    with stderr.status("evaluating…") as status:
        report = run_eval(
            catalog,
            queries,
            methods=[method] if method else None,
            embedder=embedder,
            cards_dir=cards_dir,
            trust=trust,
            raw=not no_raw,
            progress=lambda label: status.update(f"evaluating {label}…"),
        )
    if json_out:
        print_json(report.model_dump())
        return
    _print_report(report.model_dump(), show_failures=failures)


def _print_report(report: dict[str, Any], *, show_failures: bool) -> None:
    from cartograph.eval.metrics import METRIC_NAMES

    rows = []
    for row in report["rows"]:
        label = row["method"] + (" (expected)" if row["expected"] else "")
        cells = [
            f"{m['mean']:.3f} [{m['low']:.2f},{m['high']:.2f}]"
            for m in (row["metrics"][n] for n in METRIC_NAMES)
        ]
        rows.append([row["card_set"], label, *cells])
    title = f"{report['queries']} queries, {report['tools']} tools, {report['embedder']}"
    print_table(title, ["cards", "ranker", *METRIC_NAMES], rows)
    if not show_failures:
        return
    for row in report["rows"]:
        if row["card_set"] != "template" or row["method"] != "hybrid":
            continue
        for f in row["failures"]:
            stdout.print(f"- rank {f['gold_rank']}: {f['query'][:100]}", highlight=False)
            stdout.print(f"    gold {', '.join(f['gold'][:4])}", highlight=False)
            stdout.print(f"    top  {', '.join(f['top'])}", highlight=False)


def _index_for(
    config_path: Path | None, catalog: Path | None, embedder: str | None, method: str | None
) -> tuple[Any, Any]:
    """Index + verified cards: a snapshot is attested in memory; else the config's cards."""
    from cartograph.cards.attest import attest_in_memory
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.config.model import Config
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    cfg = Config()
    path = resolve_config_path(config_path)
    if path.exists():
        from cartograph.config.loader import load_config

        cfg = load_config(path)
    if catalog is not None:
        snapshot = load_catalog(catalog)
    else:
        from cartograph.upstream.federation import load_catalog_for

        snapshot = anyio.run(load_catalog_for, cfg, None)
    cards = attest_in_memory(snapshot)
    name = embedder or cfg.index.embedder
    index = ToolIndex.build(
        cards,
        get_embedder(name),
        default_method=method or cfg.index.ranker,
        pooled_steps=cfg.index.pooled_steps,
    )
    return index, cards
