"""The main job on the demo federation, one small step at a time.

connect → operator key → bootstrap signed cards → verify them → an agent
drives ``cartograph serve`` → the same agent does one multi-step task step by
step and then as one code-mode ``run``. Each step reads and extends one
:class:`DemoContext`, records a JSON-able result, and prints as it goes
(unless ``--json``). A step that cannot show what it should records a failed
check instead of stopping the demo, so the summary says what went wrong.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp import Client

from cartograph.cards.bootstrap import BootstrapResult, attest_catalog
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.operator import OperatorKey, ensure_operator_key
from cartograph.cards.overrides import OverridingGenerator, config_overrides
from cartograph.cards.paths import trust_path
from cartograph.cards.store import CardStore
from cartograph.cards.trust import load_trust
from cartograph.catalog.model import Catalog
from cartograph.config.catalog_rules import DEFAULT_CATALOG_NAME
from cartograph.config.loader import load_config
from cartograph.config.model import Config
from cartograph.demo import agent, code_task, render, tokens
from cartograph.errors import DemoError
from cartograph.upstream.federation import FederationResult, connect_federation

SERVE_LOG: Final = "demo-serve.log"
"""The proxy's stderr during the agent step, kept in the state dir for a post-mortem."""


@dataclass(frozen=True)
class AgentTask:
    """A task an agent might have, the tools that are right first, and the call it makes.

    ``first`` is what a right answer starts with (several when the federation
    has equivalent tools); the demo records a check that one of them is first.
    """

    task: str
    call: tuple[str, str, dict[str, Any]] | None = None
    first: frozenset[tuple[str, str]] = frozenset()


_MEMORY_WRITES: Final = frozenset(
    ("memory", t) for t in ("create_entities", "create_relations", "add_observations")
)

# Everyday tasks for three different real servers; the first one's answer is called.
AGENT_TASKS: Final = (
    AgentTask(
        "what time is it in Tokyo",
        ("time", "get_current_time", {"timezone": "Asia/Tokyo"}),
        first=frozenset({("time", "get_current_time")}),
    ),
    AgentTask(
        "read a file from the project folder",
        first=frozenset({("filesystem", "read_text_file"), ("filesystem", "read_file")}),
    ),
    AgentTask("store a fact about a person in the knowledge graph", first=_MEMORY_WRITES),
    AgentTask("remember that Alice works at Acme as an engineer", first=_MEMORY_WRITES),
)
DISCOVER_K: Final = 5
# What the check holds the ranking to: a right tool among the first three the agent
# reads. Which one comes first is a quality figure (benchmarks, docs/retrieval.md),
# not a pass/fail line: between near-equal tools the order can turn on a score
# margin smaller than the embedder's spread across machines and instruction sets.
CHECKED_TOP: Final = 3


def _right_tool_shown(item: AgentTask, found: Any) -> tuple[str, bool, str]:
    """The check for one task: its name, whether a right tool is shown, and the ranks."""
    shown = [(t.server, t.tool) for t in found.tools[:CHECKED_TOP]]
    ranks = [i + 1 for i, pair in enumerate(shown) if pair in item.first]
    first = f"{shown[0][0]}/{shown[0][1]}" if shown else "nothing"
    detail = f"right tool at rank {ranks[0]}; first: {first}" if ranks else f"first: {first}"
    return (f"right tool in the top {CHECKED_TOP} for {item.task!r}", bool(ranks), detail)


async def _connect_quietly(config: Config) -> FederationResult:
    return await connect_federation(config)


def _show_nothing(_result: FederationResult) -> None:
    return None


@dataclass(frozen=True)
class FederationView:
    """How the caller connects to and shows the federation.

    ``cartograph demo`` passes its progress bar and report table, so the demo
    package uses the CLI's presentation without importing the CLI (the layers
    run one way: cli → demo).
    """

    connect: Callable[[Config], Awaitable[FederationResult]] = _connect_quietly
    show_reports: Callable[[FederationResult], None] = _show_nothing


@dataclass
class DemoContext:
    """What the steps share: config, the live federation, the key, and the results."""

    config_path: Path
    config: Config
    json_out: bool
    view: FederationView = field(default_factory=FederationView)
    federation: FederationResult | None = None
    catalog: Catalog | None = None
    operator: OperatorKey | None = None
    client: Client | None = None
    """The agent's SDK client on ``cartograph serve``, open from the agent step to the end."""
    results: dict[str, Any] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    exits: AsyncExitStack = field(default_factory=AsyncExitStack)

    @property
    def show(self) -> bool:
        return not self.json_out

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        """Record one thing the demo promises to show (a failure makes the exit code 1)."""
        self.checks.append({"check": name, "ok": ok, "detail": detail})


DemoStep = Callable[[DemoContext], Awaitable[None]]


def load_demo_config(config_path: Path, state_dir: Path | None) -> Config:
    config = load_config(config_path)
    if state_dir is not None:
        config = config.model_copy(update={"state_dir": state_dir.resolve()})
    return config


async def step_connect(ctx: DemoContext) -> None:
    """Connect to every upstream at once and list their tools (kept open for bootstrap)."""
    ctx.federation = await ctx.view.connect(ctx.config)
    ctx.exits.push_async_callback(ctx.federation.aclose)
    ctx.catalog = ctx.federation.catalog
    ctx.results["connect"] = ctx.federation.summary()
    ctx.results["servers"] = [r.to_dict() for r in ctx.federation.reports]
    ctx.check("servers connected", ctx.catalog.tool_count > 0, f"{len(ctx.catalog.servers)}")
    if ctx.show:
        ctx.view.show_reports(ctx.federation)


async def step_key(ctx: DemoContext) -> None:
    """The operator key: made once (as `cartograph keys init` does), reused afterwards."""
    ctx.operator = ensure_operator_key(ctx.config)
    ctx.results["key"] = ctx.operator.to_dict()
    if ctx.show:
        render.key(ctx.operator)


async def step_bootstrap(ctx: DemoContext) -> None:
    """Template cards for every connected server, signed; unchanged cards stay byte-identical."""
    assert ctx.catalog is not None and ctx.operator is not None
    started = time.perf_counter()
    with render.progress(ctx.show) as bar:
        task = bar.add_task("attesting", total=len(ctx.catalog.servers))
        result = attest_catalog(
            ctx.catalog,
            store=CardStore(ctx.config.state_dir),
            key=ctx.operator.key,
            generator=_generator(ctx.config),
            overrides=config_overrides(ctx.config),
            configs={s.name: s for s in ctx.config.servers},
            progress=lambda _name: bar.advance(task),
            trust=load_trust(trust_path(ctx.config)),
        )
    ctx.results["bootstrap"] = _bootstrap_summary(result, time.perf_counter() - started)
    ctx.check("cards attested", result.count("failed") == 0, f"{result.count('failed')} failed")
    # The proxy opens its own sessions: close ours rather than run two federations at once.
    await ctx.exits.aclose()
    if ctx.show:
        render.bootstrap(ctx.results["bootstrap"], result)


def _generator(config: Config) -> OverridingGenerator:
    """The offline template generator (no API key), with the operator's overrides."""
    return OverridingGenerator(TemplateGenerator(), config_overrides(config))


def _bootstrap_summary(result: BootstrapResult, seconds: float) -> dict[str, Any]:
    return {
        "servers": len(result.outcomes),
        "tools": sum(o.tools for o in result.outcomes),
        "written": result.count("written"),
        "unchanged": result.count("unchanged"),
        "failed": result.count("failed"),
        "cards": [
            {"server": o.server, "outcome": o.outcome, "version": o.version}
            for o in result.outcomes
        ],
        "seconds": round(seconds, 3),
    }


async def step_verify(ctx: DemoContext) -> None:
    """Verify every card on disk against the trust set, as start-up will."""
    report = CardStore(ctx.config.state_dir).load(load_trust(trust_path(ctx.config)))
    verified = sorted(report.verified)
    failures = {s: exc.to_dict() for s, exc in report.failures.items()}
    expected = {s.name for s in ctx.catalog.servers} if ctx.catalog is not None else set()
    missing = sorted(expected - set(verified) - set(failures))
    ctx.results["verify"] = {
        "verified": len(verified),
        "failed": failures,
        "missing": missing,
        "signers": sorted({report.verified.signer(s) for s in verified}),
    }
    ok = bool(verified) and not failures and not missing
    ctx.check("cards verified", ok, f"{len(verified)} verified, {len(failures)} failed")
    if ctx.show:
        render.verify(ctx.results["verify"])


async def step_agent(ctx: DemoContext) -> None:
    """Be the agent: spawn `cartograph serve`, list, discover, call, status.

    The client stays open for the steps after this one (``ctx.exits`` closes it).
    """
    log = Path(ctx.config.state_dir) / SERVE_LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    errlog = ctx.exits.enter_context(log.open("w"))
    client = await ctx.exits.enter_async_context(
        agent.proxy_client(ctx.config_path, state_dir=ctx.config.state_dir, errlog=errlog)
    )
    ctx.client = client
    names, list_bytes = await agent.list_proxy_tools(client)
    ctx.results["agent"] = {"proxy_tools": names, "tools_list_bytes": list_bytes}
    expected = expected_proxy_tools(ctx.config)
    ctx.check(f"{len(expected)} proxy tools", names == expected, str(names))
    if ctx.show:
        render.proxy_tools(names, list_bytes)
    for item in AGENT_TASKS:
        await _discover_and_call(ctx, client, item)
    await _status(ctx, client)
    ctx.results["agent"]["serve_log"] = str(log)


def expected_proxy_tools(config: Config) -> list[str]:
    """What the demo's catalog lists: the three tools, and ``run`` where code mode is on."""
    code_mode = config.code_mode_for(DEFAULT_CATALOG_NAME).enabled
    return ["discover", "status", "call", *([code_task.RUN] if code_mode else [])]


async def _discover_and_call(ctx: DemoContext, client: Any, item: AgentTask) -> None:
    found = await agent.discover(client, item.task, DISCOVER_K)
    ctx.results["agent"].setdefault("discover", []).append(found.to_dict())
    if ctx.show:
        render.discovery(found)
    if item.first:
        ctx.check(*_right_tool_shown(item, found))
    if item.call is None:
        return
    server, tool, arguments = item.call
    ctx.check(f"discover found {server}/{tool}", found.has(server, tool), item.task)
    if not found.has(server, tool):
        return
    result = await agent.call(client, server, tool, arguments)
    text = agent.result_text(result)
    ctx.results["agent"]["call"] = {
        "server": server,
        "tool": tool,
        "arguments": arguments,
        "is_error": result.is_error,
        "text": text,
        "structured": result.structured_content,
    }
    ctx.check(f"call {server}/{tool}", not result.is_error and bool(text), text[:200])
    if ctx.show:
        render.call(server, tool, arguments, result.is_error, text)


async def _status(ctx: DemoContext, client: Any) -> None:
    report = await agent.status(client, detail=True)
    totals = report.get("totals", {})
    ctx.results["agent"]["status"] = {
        "totals": totals,
        "servers": {s["name"]: s["health"] for s in report.get("servers", [])},
    }
    if ctx.show:
        render.status(totals)


async def step_code(ctx: DemoContext) -> None:
    """Code mode: one multi-step task with discover + call step by step, then as one run.

    Skipped, saying why, where the proxy does not list ``run`` or lacks the sandbox
    (``cartograph[code]``); otherwise one check: the run's answer is the step-by-step one.
    """
    assert ctx.client is not None
    folder = (ctx.config_path.parent / code_task.FOLDER).resolve()
    try:
        compared = await code_task.compare(ctx.client, folder)
    except DemoError as exc:
        ctx.results["code_mode"] = {"error": exc.to_dict()}
        ctx.check(code_task.CHECK, False, f"{exc.code}: {exc.message}")
        return
    ctx.results["code_mode"] = compared.to_dict(tokens.cl100k())
    if compared.skipped is None:
        ctx.check(code_task.CHECK, compared.same_answer, compared.detail())
    if ctx.show:
        render.code_mode(ctx.results["code_mode"])


# The main job, in order.
DEMO_STEPS: list[tuple[str, DemoStep]] = [
    ("connect", step_connect),
    ("key", step_key),
    ("bootstrap", step_bootstrap),
    ("verify", step_verify),
    ("agent", step_agent),
    ("code", step_code),
]
