"""``cartograph discover`` and ``cartograph eval``: retrieval from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Final

import anyio
import typer

from cartograph import error_codes as codes
from cartograph import startup_gc
from cartograph.cli.app import (
    CatalogOption,
    ConfigOption,
    EmbedderOption,
    JsonOption,
    MethodOption,
    app,
    load_config_or_defaults,
    resolve_config_path,
)
from cartograph.cli.output import print_json, print_table, stderr, stdout, working
from cartograph.cli.serve import THROWAWAY, CatalogNameOption, UnsafeThrowawayKeyOption
from cartograph.errors import ConfigError, OptionError


@app.command()
def discover(
    task: Annotated[str, typer.Argument(help="The task, in plain words.")],
    k: Annotated[int, typer.Option("-k", help="How many tools to return.", min=1)] = 5,
    method: MethodOption = None,
    embedder: EmbedderOption = None,
    config: ConfigOption = None,
    catalog: CatalogOption = None,
    catalog_name: CatalogNameOption = None,
    unsafe_throwaway_key: UnsafeThrowawayKeyOption = False,
    json_out: JsonOption = False,
) -> None:
    """The top-k tools for TASK from the operator's signed cards, ranked exactly as `serve` does.

    With --catalog, tools that drifted from their card in that snapshot are left out.
    """
    # One answer, then exit: nothing built on the way is garbage worth a collection.
    with startup_gc.paused(), working("loading cards and the index, ranking"):
        result, attestation = _discover_once(
            task, k, method, embedder, config, catalog, catalog_name, unsafe_throwaway_key
        )
    if attestation != OPERATOR_CARDS:
        stderr.print(f"[yellow]{attestation}[/]", highlight=False)
    if json_out:
        print_json({**result.model_dump(), "attestation": attestation})
        return
    if result.abstained:
        stderr.print(f"[yellow]{result.hint}[/]", highlight=False)
    rows = [
        (i, t.server, t.tool, f"{t.score:.3f}", t.description, f"v{t.provenance.card_version}")
        for i, t in enumerate(result.tools, start=1)
    ]
    print_table(
        f"discover ({result.method}, confidence {result.confidence:.2f})",
        ["#", "server", "tool", "score", "description", "card"],
        rows,
    )


OPERATOR_CARDS: Final = "operator"


def _discover_once(
    task: str,
    k: int,
    method: str | None,
    embedder: str | None,
    config_path: Path | None,
    snapshot: Path | None,
    catalog_name: str | None,
    attest: bool,
) -> tuple[Any, str]:
    """``discover`` through the serving path: the runtime ``serve`` starts, without upstreams."""
    from cartograph.cli.serve import pick_catalog

    cfg = load_config_or_defaults(config_path)
    if embedder is not None:
        cfg = cfg.model_copy(update={"index": cfg.index.model_copy(update={"embedder": embedder})})
    if attest and snapshot is not None:
        return _snapshot_attested(cfg, snapshot, task, k, method), THROWAWAY
    if not attest and cfg.source is None:
        raise ConfigError(
            f"no config file at {resolve_config_path(config_path)}: pass --config, or write one "
            "(docs/config.md) and run `cartograph keys init` and `cartograph bootstrap`",
            code=codes.CONFIG_MISSING,
        )
    chosen = pick_catalog(cfg, catalog_name)
    if attest:
        found = anyio.run(_live_attested, cfg, chosen, task, k, method)
        return found, THROWAWAY
    return _operator_discover(cfg, chosen, task, k, method, snapshot), OPERATOR_CARDS


def _operator_discover(
    cfg: Any, chosen: Any, task: str, k: int, method: str | None, snapshot: Path | None
) -> Any:
    """What `serve` answers in its first seconds: verified cards and the cached index.

    Built through :mod:`cartograph.index.serving` like the runtime's index, but
    without the runtime's gateway, so no upstream (and not the MCP SDK) is
    touched. A ``--catalog`` snapshot is checked for drift first.
    """
    from cartograph.cards.drift import DriftReport, check_drift
    from cartograph.index.discover import discover as run_discover
    from cartograph.index.embedders import get_embedder
    from cartograph.index.serving import (
        build_serving_index,
        excluded_tools,
        serving_cache,
        serving_cards,
        warm_up,
    )

    names = {s.name for s in chosen.servers}
    embedder = get_embedder(cfg.index.embedder)
    warm = warm_up(embedder)
    cards = serving_cards(cfg, names)
    drift = DriftReport()
    if snapshot is not None:
        from cartograph.catalog.model import Catalog
        from cartograph.catalog.snapshot import load_catalog

        listed = tuple(s for s in load_catalog(snapshot).servers if s.name in names)
        drift = check_drift(cards, Catalog(servers=listed))
    excluded = excluded_tools(cards, drift, chosen.policy)
    index = build_serving_index(cfg, cards, embedder, cache=serving_cache(cfg), exclude=excluded)
    if warm is not None:
        warm.join()
    return run_discover(index, cards, task, k=k or cfg.index.default_k, method=method)


async def _live_attested(cfg: Any, chosen: Any, task: str, k: int, method: str | None) -> Any:
    """The live federation, listed and signed with a throwaway key, then ranked."""
    from cartograph.cli.serve import start_runtime

    runtime = await start_runtime(cfg, chosen, unsafe_throwaway_key=True)
    try:
        return runtime.discover(task, k, method=method)
    finally:
        await runtime.aclose()


def _snapshot_attested(cfg: Any, snapshot: Path, task: str, k: int, method: str | None) -> Any:
    """A snapshot signed in memory: no config servers needed, the embedding cache still used."""
    from cartograph.cards.attest import attest_with_unsafe_throwaway_key
    from cartograph.catalog.snapshot import load_catalog
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.discover import discover as run_discover
    from cartograph.index.embedders import get_embedder
    from cartograph.index.tool_index import ToolIndex

    cards = attest_with_unsafe_throwaway_key(load_catalog(snapshot))
    index = ToolIndex.build(
        cards,
        get_embedder(cfg.index.embedder),
        cache=EmbeddingCache(cfg.state_dir),
        default_method=cfg.index.ranker,
        pooled_steps=cfg.index.pooled_steps,
    )
    return run_discover(index, cards, task, k=k, method=method)


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
    learning: Annotated[
        bool,
        typer.Option("--learning", help="Prequential replay with learning from use instead."),
    ] = False,
    feedback: Annotated[
        str, typer.Option("--feedback", help="--learning: surfaced, oracle or both.")
    ] = "both",
    noise: Annotated[
        float, typer.Option("--noise", help="--learning: share of wrong successful calls.")
    ] = 0.2,
    seed: Annotated[int, typer.Option("--seed", help="--learning: replay order seed.")] = 0,
    limit: Annotated[
        int | None, typer.Option("--limit", help="--learning: a seeded sample of N queries.", min=1)
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Every ranker over template cards (and raw text, and --cards) with 95 % intervals.

    With --learning: the queries replayed in a seeded order, each ranked with
    only the (simulated) feedback of earlier ones; zero-shot beside it.
    """
    from cartograph.eval.run import run_eval

    if catalog is None:
        raise OptionError("eval needs --catalog catalog.json", code=codes.EVAL_NEEDS_CATALOG)
    if learning:
        from cartograph.cli.learning import eval_learning

        eval_learning(
            catalog, queries, method, embedder, feedback, noise, seed, limit, json_out=json_out
        )
        return
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
