"""`keys init|list|trust|revoke`, `bootstrap`, `cards verify|show|diff`.

Key and trust paths come from ``[cards] key`` / ``[cards] trust`` in the
config, defaulting to ``<state_dir>/keys/operator.key`` and
``<state_dir>/trust.toml``. Cards live in ``<state_dir>/cards``.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
from cartograph.errors import CardError, ConfigError, OptionError

# pydantic models and rich's widgets load where they are used: `--help` stays fast.
if TYPE_CHECKING:
    from rich.progress import Progress

    from cartograph.config.model import Config
    from cartograph.upstream.federation import ServerReport

keys_app = typer.Typer(help="Operator signing keys and the trust set.", no_args_is_help=True)
cards_app = typer.Typer(help="Inspect and verify signed capability cards.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(cards_app, name="cards")

StateDirOption = Annotated[
    Path | None, typer.Option("--state-dir", help="State directory (default: config state_dir).")
]
ServerOption = Annotated[
    list[str] | None,
    typer.Option("--server", "-s", help="Only this server (repeatable)."),
]


def _config(config_path: Path | None, state_dir: Path | None, *, required: bool = False) -> Config:
    """Load the config; without a config file, defaults (for --catalog and keys work)."""
    from cartograph.config.loader import load_config
    from cartograph.config.model import Config

    path = resolve_config_path(config_path)
    if path.exists():
        config = load_config(path)
    elif required or config_path is not None:
        raise ConfigError(
            f"{path}: config file not found; pass --config", code=codes.CONFIG_MISSING
        )
    else:
        config = Config()
    if state_dir is not None:
        config = config.model_copy(update={"state_dir": state_dir})
    return config


@keys_app.command("init")
def keys_init(
    config: ConfigOption = None,
    state_dir: StateDirOption = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing key.")] = False,
    json_out: JsonOption = False,
) -> None:
    """Create the operator's Ed25519 key pair and add it to the trust set."""
    from cartograph.cards.operator import init_operator_key

    made = init_operator_key(_config(config, state_dir), force=force)
    info = {k: v for k, v in made.to_dict().items() if k != "created"}
    if json_out:
        print_json(info)
        return
    for name, value in info.items():
        stdout.print(f"{name:12} {value}", highlight=False)


@keys_app.command("list")
def keys_list(
    config: ConfigOption = None, state_dir: StateDirOption = None, json_out: JsonOption = False
) -> None:
    """The trust set: trusted keys, their server scopes, and revocations."""
    from cartograph.cards.paths import trust_path
    from cartograph.cards.trust import load_trust

    trust = load_trust(trust_path(_config(config, state_dir)))
    rows = [
        [k.key_id, ", ".join(k.servers), k.label, "revoked" if k.key_id in trust.revoked else ""]
        for k in trust.keys
    ]
    rows += [
        [kid, "", "", "revoked"] for kid in sorted(trust.revoked - {k.key_id for k in trust.keys})
    ]
    if json_out:
        print_json(
            [dict(zip(["key_id", "servers", "label", "status"], r, strict=True)) for r in rows]
        )
        return
    print_table("trust set", ["key id", "servers", "label", "status"], rows)


@keys_app.command("trust")
def keys_trust(
    public_key: Annotated[Path, typer.Argument(help="Public key file (from keys init).")],
    server: Annotated[
        list[str] | None, typer.Option("--server", help="Server name pattern it may attest.")
    ] = None,
    label: Annotated[str, typer.Option("--label")] = "",
    config: ConfigOption = None,
    state_dir: StateDirOption = None,
) -> None:
    """Add another operator's public key to the trust set, scoped to server patterns."""
    from cartograph.cards.keys import load_public_key
    from cartograph.cards.paths import trust_path
    from cartograph.cards.trust import TrustedKey, load_trust, save_trust

    path = trust_path(_config(config, state_dir))
    key = load_public_key(public_key)
    scopes = tuple(server or ["*"])
    save_trust(load_trust(path).with_key(TrustedKey(key, scopes, label)), path)
    stdout.print(f"trusted {key.key_id} for {', '.join(scopes)}", highlight=False)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="Key id to revoke.")],
    config: ConfigOption = None,
    state_dir: StateDirOption = None,
) -> None:
    """Revoke a key: cards it signed stop verifying, even with valid signatures."""
    from cartograph.cards.paths import trust_path
    from cartograph.cards.trust import load_trust, save_trust

    path = trust_path(_config(config, state_dir))
    save_trust(load_trust(path).revoke(key_id), path)
    stdout.print(f"revoked {key_id}", highlight=False)


def _generator(cfg: Config, name: str | None) -> Any:
    from cartograph.cards.generators.llm import LLMGenerator
    from cartograph.cards.generators.template import TemplateGenerator
    from cartograph.cards.overrides import OverridingGenerator, config_overrides

    choice = name or cfg.cards.generator
    if choice not in ("template", "llm"):
        raise OptionError(f"--generator {choice!r}: use template or llm", code=codes.BAD_GENERATOR)
    base: Any = LLMGenerator(cfg.cards.llm) if choice == "llm" else TemplateGenerator()
    return OverridingGenerator(base, config_overrides(cfg))


@app.command()
def bootstrap(
    server: ServerOption = None,
    generator: Annotated[
        str | None, typer.Option("--generator", help="template (default) or llm.")
    ] = None,
    config: ConfigOption = None,
    catalog: CatalogOption = None,
    state_dir: StateDirOption = None,
    json_out: JsonOption = False,
) -> None:
    """Connect, list, generate, sign and write cards; unchanged servers are left untouched."""
    from cartograph.cards.bootstrap import attest_catalog
    from cartograph.cards.keys import load_private_key
    from cartograph.cards.overrides import config_overrides
    from cartograph.cards.paths import key_path, trust_path
    from cartograph.cards.store import CardStore
    from cartograph.cards.trust import load_trust
    from cartograph.cli.federation import federation_catalog, only_servers, show_failures

    cfg = _config(config, state_dir)
    key = load_private_key(key_path(cfg))
    only = set(server) if server else None
    live = cfg if only is None or catalog or cfg.catalog else only_servers(cfg, only)
    started = time.perf_counter()
    failed: list[ServerReport] = []
    federation = federation_catalog(live, catalog, failed=failed)
    connected = time.perf_counter()
    if only is not None:
        unknown = sorted(only - {s.name for s in federation.servers} - {r.name for r in failed})
        if unknown:
            raise OptionError(
                f"--server {', '.join(unknown)}: not in the federation (or it failed to connect)",
                code=codes.UNKNOWN_SERVER,
            )
    todo = [s for s in federation.servers if only is None or s.name in only]
    with _progress() as bar:
        task = bar.add_task("attesting", total=len(todo))
        result = attest_catalog(
            federation,
            store=CardStore(cfg.state_dir),
            key=key,
            generator=_generator(cfg, generator),
            overrides=config_overrides(cfg),
            configs={s.name: s for s in cfg.servers},
            only=only,
            progress=lambda _name: bar.advance(task),
            trust=load_trust(trust_path(cfg)),
        )
    finished = time.perf_counter()
    if key.key_id not in {k.key_id for k in load_trust(trust_path(cfg)).keys}:
        stderr.print(
            "[yellow]warning[/]: the signing key is not in the trust set, so start-up will not "
            "load these cards; run `cartograph keys init` or `cartograph keys trust`",
            highlight=False,
        )
    outcomes = [*result.outcomes, *(_unlisted_outcome(r) for r in failed)]
    _print_bootstrap(outcomes, connected - started, finished - connected, json_out)
    show_failures(failed)
    if failed or result.count("failed"):
        raise typer.Exit(EXIT_CHECK_FAILED)


def _unlisted_outcome(report: ServerReport) -> Any:
    """A server that failed to connect or list: no card was written for it."""
    from cartograph.cards.bootstrap import ServerOutcome
    from cartograph.cli.federation import error_text

    return ServerOutcome(report.name, "failed", reason=error_text(report))


def _progress() -> Progress:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    )


def _print_bootstrap(outcomes: Any, connect_s: float, attest_s: float, json_out: bool) -> None:
    rows = [[o.server, o.outcome, o.version, o.tools, o.reason] for o in outcomes]
    if json_out:
        print_json(
            {
                "servers": [
                    dict(zip(["server", "outcome", "version", "tools", "reason"], r, strict=True))
                    for r in rows
                ],
                "connect_seconds": round(connect_s, 3),
                "attest_seconds": round(attest_s, 3),
            }
        )
        return
    print_table("bootstrap", ["server", "outcome", "version", "tools", "reason"], rows)
    stdout.print(
        f"connect+list {connect_s:.2f}s, generate+sign+write {attest_s:.2f}s", highlight=False
    )


@cards_app.command("verify")
def cards_verify(
    config: ConfigOption = None, state_dir: StateDirOption = None, json_out: JsonOption = False
) -> None:
    """Verify every card on disk; exit 1 naming each card that fails and why."""
    from cartograph.cards.paths import trust_path
    from cartograph.cards.store import CardStore
    from cartograph.cards.trust import load_trust

    cfg = _config(config, state_dir)
    store = CardStore(cfg.state_dir)
    report = store.load(load_trust(trust_path(cfg)))
    rows: list[list[Any]] = [
        [s, "ok", report.verified[s].version, report.verified.signer(s)[:16], ""]
        for s in report.verified
    ]
    rows += [[s, exc.code, "", "", exc.message] for s, exc in report.failures.items()]
    # A configured server with no card file at all is a failure too: `serve` cannot serve it.
    missing = [s.name for s in cfg.enabled_servers if s.name not in store.servers()]
    rows += [
        [s, codes.CARD_MISSING, "", "", f"no card file; run `cartograph bootstrap --server {s}`"]
        for s in missing
    ]
    rows.sort(key=lambda r: str(r[0]))
    if json_out:
        print_json(
            [
                dict(zip(["server", "status", "version", "signer", "reason"], r, strict=True))
                for r in rows
            ]
        )
    else:
        print_table(
            f"cards in {store.root}", ["server", "status", "version", "signer", "reason"], rows
        )
    if report.failures or missing or not rows:
        if not rows:
            stderr.print(f"no cards in {store.root}; run `cartograph bootstrap`", highlight=False)
        raise typer.Exit(EXIT_CHECK_FAILED)


@cards_app.command("show")
def cards_show(
    server: Annotated[str, typer.Argument(help="Server whose card to show.")],
    config: ConfigOption = None,
    state_dir: StateDirOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show one verified card: identity, capability, and every tool's text."""
    from cartograph.cards.paths import trust_path
    from cartograph.cards.store import CardStore
    from cartograph.cards.trust import load_trust

    cfg = _config(config, state_dir)
    store = CardStore(cfg.state_dir)
    if server not in store.servers():
        _refuse_unconfigured(server, cfg, store.servers())
        raise CardError(
            f"no card for {server!r} in {store.root}; run `cartograph bootstrap --server {server}`",
            code=codes.CARD_MISSING,
        )
    trust = load_trust(trust_path(cfg))
    card, proof = store.verify_one(server, trust)
    if json_out:
        print_json(card.json_dict())
        return
    body = card.body
    stdout.print(
        f"[bold]{body.identity.server}[/] v{body.version} — signed by {proof.key_id[:16]}…"
    )
    stdout.print(f"{body.identity.transport} {body.identity.endpoint}", highlight=False)
    stdout.print(body.capability.summary, highlight=False)
    prov = body.provenance
    stdout.print(
        f"[dim]{prov.generator} {prov.generator_version} {prov.model or ''} {prov.created_at}[/]"
    )
    print_table(
        "tools",
        ["tool", "description", "example"],
        [[t.name, t.description, _compact(t.example)] for t in body.tools],
    )
    _print_transforms(body)
    _print_name_notes(store, trust, card)


def _print_name_notes(store: Any, trust: Any, card: Any) -> None:
    """Cartograph's notes (not signed) on this card's names that other servers' tools share."""
    from cartograph.index.entries import name_notes

    cards = {card.server: card}
    for other in store.servers():
        if other != card.server:
            with contextlib.suppress(CardError):  # `cards verify` reports those
                cards[other] = store.verify_one(other, trust)[0]
    notes = name_notes(cards)
    rows = [
        [t.name, notes[(card.server, t.name)].line()]
        for t in card.body.tools
        if (card.server, t.name) in notes
    ]
    if rows:
        print_table(
            "names other servers share (Cartograph's note, not signed)", ["tool", "note"], rows
        )


def _print_transforms(body: Any) -> None:
    """The reshaped tools: served name <- upstream name, arguments renamed, hidden, narrowed."""
    from cartograph.cards.transforms import transform_line

    rows = [[t.name, t.upstream_name, transform_line(t)] for t in body.tools if t.transform]
    if rows:
        print_table("transforms (served <- upstream)", ["tool", "upstream", "transform"], rows)


def _refuse_unconfigured(server: str, cfg: Config, carded: list[str]) -> None:
    """A name with no card that is not a configured server is a typo: bootstrapping it fails."""
    from cartograph.suggest import did_you_mean

    configured = [s.name for s in cfg.servers]
    if server in configured:
        return
    where = cfg.source or "the config"
    raise OptionError(
        f"{server!r} is not a configured server in {where}; "
        f"{did_you_mean(server, [*configured, *carded], what='servers')}",
        code=codes.UNKNOWN_SERVER,
    )


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@cards_app.command("diff")
def cards_diff(
    config: ConfigOption = None,
    catalog: CatalogOption = None,
    state_dir: StateDirOption = None,
    exit_code: Annotated[
        bool, typer.Option("--exit-code", help="Exit 1 when anything differs.")
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """What changed upstream since attestation: drifted, new, and missing tools.

    A server that could not be listed (unreachable, or its tools now collide
    after normalisation) is a difference too: nothing says it is unchanged.
    """
    from cartograph.cards.drift import check_drift
    from cartograph.cards.paths import trust_path
    from cartograph.cards.store import CardStore
    from cartograph.cards.trust import load_trust
    from cartograph.cli.federation import federation_catalog

    cfg = _config(config, state_dir)
    report = CardStore(cfg.state_dir).load(load_trust(trust_path(cfg)))
    unlisted: list[ServerReport] = []
    federation = federation_catalog(cfg, catalog, failed=unlisted)
    drift = check_drift(report.verified, federation)
    problems = [e for e in drift if e.status != "ok"]
    changes = _changed_text(report.verified, federation, problems, CardStore(cfg.state_dir).root)
    upstream = _upstream_names(report.verified, problems)
    rows = [[e.server, _both(e, upstream), e.status, ", ".join(e.changed)] for e in problems]
    rows += [[s, "*", f"card not loaded ({exc.code})", ""] for s, exc in report.failures.items()]
    rows += [[r.name, "*", f"not listed ({_code(r)})", ""] for r in unlisted]
    if json_out:
        print_json(
            {
                "drift": drift.to_dict(),
                "card_failures": {s: e.to_dict() for s, e in report.failures.items()},
                "unlisted": {r.name: _code(r) for r in unlisted},
                "changes": changes,
            }
            | ({"upstream_names": _names_json(upstream)} if upstream else {})
        )
    elif rows:
        print_table("changes since attestation", ["server", "tool", "status", "changed"], rows)
        _print_changes(changes)
        stdout.print("re-attest with `cartograph bootstrap --server SERVER`", highlight=False)
    else:
        stdout.print("no changes since attestation", highlight=False)
    if exit_code and rows:
        raise typer.Exit(EXIT_CHECK_FAILED)


def _upstream_names(cards: Any, entries: list[Any]) -> dict[tuple[str, str], str]:
    """(server, served tool) -> the upstream's name, for each entry of a renamed tool."""
    out = {}
    for entry in entries:
        card = cards.get(entry.server)
        tool = card.body.tool(entry.tool) if card is not None else None
        if tool is not None and tool.upstream_name != tool.name:
            out[(entry.server, entry.tool)] = tool.upstream_name
    return out


def _names_json(upstream: dict[tuple[str, str], str]) -> list[dict[str, str]]:
    return [{"server": s, "tool": t, "upstream": u} for (s, t), u in sorted(upstream.items())]


def _both(entry: Any, upstream: dict[tuple[str, str], str]) -> str:
    """A tool as served, and as the upstream lists it when a transform renamed it."""
    name = upstream.get((entry.server, entry.tool))
    return entry.tool if name is None else f"{entry.tool} (upstream {name})"


_PARTS = {
    "description": "description",
    "schema": "input_schema",
    "output_schema": "output_schema",
    "annotations": "annotations",
    "title": "title",
}


def _changed_text(cards: Any, federation: Any, drifted: list[Any], root: Path) -> list[Any]:
    """Old (as attested) and new text of every changed part of every drifted tool."""
    from cartograph.cards.listings import attested_tool

    live = {(s.name, t.name): t for s in federation.servers for t in s.tools}
    out = []
    for entry in (e for e in drifted if e.status == "drifted"):
        card = cards.get(entry.server)
        card_tool = card.body.tool(entry.tool) if card is not None else None
        old = attested_tool(root, entry.server, card_tool) if card_tool is not None else None
        upstream = card_tool.upstream_name if card_tool is not None else entry.tool
        new = live.get((entry.server, upstream))
        for part in entry.changed:
            field = _PARTS.get(part, part)
            change = {
                "server": entry.server,
                "tool": entry.tool,
                "part": part,
                "old": _text(getattr(old, field, None)) if old is not None else None,
                "new": _text(getattr(new, field, None)) if new is not None else None,
            }
            out.append(change if upstream == entry.tool else {**change, "upstream": upstream})
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return _compact(value)


def _print_changes(changes: list[Any]) -> None:
    from rich.markup import escape

    for change in changes:
        stdout.print(
            f"[bold]{escape(change['server'])}/{escape(change['tool'])}[/] {change['part']}:",
            highlight=False,
        )
        old = change["old"]
        if old is None:
            stdout.print("  [dim]old text not kept (attested before listings were saved)[/]")
        else:
            stdout.print(f"  [red]- {escape(old)}[/]", highlight=False)
        stdout.print(f"  [green]+ {escape(change['new'] or '')}[/]", highlight=False)


def _code(report: ServerReport) -> str:
    return report.error.code if report.error is not None else report.status
