"""How the demo reads to a person: one short block per step, then a summary.

Everything goes to stdout through rich (progress bars to stderr); with
``--json`` none of this runs and the CLI prints the results object instead.
"""

from __future__ import annotations

import json
from typing import Any, Final

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cartograph.cards.bootstrap import BootstrapResult
from cartograph.cards.operator import OperatorKey
from cartograph.demo.agent import Discovery
from cartograph.demo.code_task import describe
from cartograph.demo.tokens import INSTALL_HINT

stdout: Final = Console(soft_wrap=True)
stderr: Final = Console(stderr=True, soft_wrap=True)

SHOWN_PER_TASK: Final = 3
GIST_WIDTH: Final = 72
SIGNATURE_WIDTH: Final = 96
CALL_TEXT_WIDTH: Final = 160


def _say(text: str) -> None:
    stdout.print(text, highlight=False)


def _heading(text: str) -> None:
    stdout.print(f"\n[bold cyan]▸ {text}[/]", highlight=False)


def _short(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def progress(show: bool) -> Progress:
    """A transient stderr bar for bootstrap (silent under --json)."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    return Progress(*columns, console=stderr, transient=True, disable=not show)


def key(op: OperatorKey) -> None:
    _heading("operator key")
    verb = "created" if op.created else "reused"
    _say(
        f"{verb} Ed25519 key {op.key.key_id[:16]}… ({op.private_key}, 0600); trusted in {op.trust}"
    )


def bootstrap(summary: dict[str, Any], result: BootstrapResult) -> None:
    _heading("bootstrap: signed capability cards")
    _say(
        f"{summary['servers']} servers, {summary['tools']} tools: {summary['written']} cards "
        f"written, {summary['unchanged']} unchanged (byte-identical), {summary['failed']} failed "
        f"— {summary['seconds']:.2f}s"
    )
    for outcome in result.outcomes:
        if outcome.outcome == "failed":
            _say(f"  [red]✗ {outcome.server}[/]: {outcome.reason}")


def verify(report: dict[str, Any]) -> None:
    _heading("verify")
    signers = ", ".join(s[:16] + "…" for s in report["signers"]) or "none"
    _say(f"{report['verified']} cards verify under the trust set (signer {signers})")
    for server, error in sorted(report["failed"].items()):
        _say(f"  [red]✗ {server}[/] ({error['code']}): {error['message']}")
    for server in report["missing"]:
        _say(f"  [red]✗ {server}[/]: no card")


def proxy_tools(names: list[str], wire_bytes: int) -> None:
    _heading("agent: `cartograph serve` over stdio, driven by the MCP SDK client")
    _say(f"tools/list → {', '.join(names)}  ({wire_bytes:,} bytes)")


def discovery(found: Discovery) -> None:
    flag = "  [yellow](abstained: nothing fits well)[/]" if found.abstained else ""
    _say(f"\ndiscover [bold]{found.task!r}[/] → {found.wire_bytes:,} bytes{flag}")
    shown = found.tools[:SHOWN_PER_TASK]
    width = max((len(f"{t.server}/{t.tool}") for t in shown), default=0)
    for rank, tool in enumerate(shown, start=1):
        name = f"{tool.server}/{tool.tool}"
        signature, gist = _split_line(tool.tool, tool.text)
        _say(f"  {rank}. {name:<{width}}  {tool.score:.2f}  {escape(_short(gist, GIST_WIDTH))}")
        _say(f"     {'':<{width}}        [dim]{escape(_short(signature, SIGNATURE_WIDTH))}[/]")


def _split_line(tool: str, line: str) -> tuple[str, str]:
    """``tool(signature): gist`` as (``(signature)``, gist), for a two-line display.

    The gist follows the last ``): `` (argument descriptions may hold one; a
    gist that does only loses its head on screen, the agent got it whole).
    """
    head, sep, gist = line.removeprefix(tool).rpartition("): ")
    return (f"{head})", gist) if sep else (line, "")


def call(server: str, tool: str, arguments: dict[str, Any], is_error: bool, text: str) -> None:
    mark = "[red]error[/]" if is_error else "[green]ok[/]"
    _say(f"\ncall {server}/{tool} {_compact(arguments)} → {mark}")
    _say(f"  {_short(text, CALL_TEXT_WIDTH)}")


def status(totals: dict[str, Any]) -> None:
    _say(
        f"\nstatus → {totals.get('healthy', 0)}/{totals.get('servers', 0)} servers up, "
        f"{totals.get('tools_servable', 0)} tools servable, {totals.get('tools_drifted', 0)} "
        f"drifted, {totals.get('tools_unattested', 0)} unattested"
    )


def code_mode(result: dict[str, Any]) -> None:
    """Both ways of the code-mode task: round trips, what the agent read, the answer."""
    _heading("code mode: one `run` program instead of a call per step")
    if "skipped" in result:
        _say(f"[yellow]skipped: {escape(result['skipped'])}[/]")
        return
    if "error" in result:
        _say(f"[red]✗ {result['error']['code']}[/]: {escape(result['error']['message'])}")
        return
    steps, run, calls = result["steps"], result["run"], result["inner_calls"]
    _say(f"task: the best seller in {result['folder']}/, after discover {result['task']!r}")
    _say(
        f"step by step (discover + {steps['round_trips'] - 1} calls): "
        f"{steps['round_trips']} round trips, the agent reads {_read(steps)}"
    )
    _say(
        f"one run (discover + run, {len(calls)} inner calls in {result['run_ms']:.0f} ms): "
        f"{run['round_trips']} round trips, the agent reads {_read(run)}"
    )
    for line in calls:
        _say(f"  [dim]{escape(line)}[/]")
    mark = "[green]the same both ways[/]" if result["same_answer"] else "[red]not the same[/]"
    _say(f"answer: {escape(describe(run['answer']))} — {mark}")


def _read(way: dict[str, Any]) -> str:
    if way["read_tokens"] is None:
        return f"{way['read_bytes']:,} bytes ({INSTALL_HINT})"
    return f"{way['read_tokens']:,} tokens ({way['read_bytes']:,} bytes)"


def _code_mode_line(result: dict[str, Any]) -> str | None:
    """The summary's code-mode line (None when the step failed: its check says so)."""
    if "skipped" in result:
        return f"code mode: skipped ({escape(result['skipped'])})"
    if "steps" not in result:
        return None
    steps, run = result["steps"], result["run"]
    unit = "tokens" if result["tokens"] else "bytes"
    key = "read_tokens" if result["tokens"] else "read_bytes"
    same = "same answer" if result["same_answer"] else "[red]different answers[/]"
    return (
        f"code mode: one run instead of discover + {steps['round_trips'] - 1} calls: "
        f"{steps['round_trips']} → {run['round_trips']} round trips, the agent reads "
        f"{steps[key]:,} → {run[key]:,} {unit}, {same}"
    )


def summary(results: dict[str, Any]) -> None:
    _heading("summary")
    connect = results.get("connect", {})
    agent = results.get("agent", {})
    seen = agent.get("tools_list_bytes", 0) + max(
        (d["wire_bytes"] for d in agent.get("discover", [])), default=0
    )
    raw = connect.get("tools_list_bytes", 0)
    if seen and raw:
        _say(
            f"the agent's context: tools/list + one discover ≈ {seen:,} bytes, instead of the "
            f"federation's {connect.get('tools', 0)} tools ({raw:,} bytes of tools/list): "
            f"{raw / seen:.0f}× smaller"
        )
    code = _code_mode_line(results.get("code_mode", {}))
    if code:
        _say(code)
    steps = ", ".join(f"{k} {v:.1f}s" for k, v in results["timings"].items() if k != "total")
    _say(f"wall time {results['timings']['total']:.1f}s ({steps})")
    failed = [c for c in results["checks"] if not c["ok"]]
    for check in failed:
        _say(f"[red]✗ {check['check']}[/]: {check['detail']}")
    if not failed:
        _say(f"[green]✓ all {len(results['checks'])} checks passed[/]")
