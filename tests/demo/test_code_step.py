"""The demo's code-mode step on the real demo federation, without the rest of the demo.

An SDK client on `cartograph serve` (the demo config, code mode on, signed cards)
does the demo's multi-step task step by step with `discover` + `call` and then as
one `run` program in real Monty workers; a second proxy whose Python cannot import
the sandbox shows the step skipped, saying so, with no failed check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from cartograph.demo import agent, code_task, steps, tokens
from cartograph.demo.loopback import DEMO_HTTP_PORT_ENV
from tests.demo.support import CONFIG

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.anyio]

ORDERS = CONFIG.parent / code_task.FOLDER
NO_SANDBOX = (
    "import sys; sys.modules['pydantic_monty'] = None; "  # `import pydantic_monty` now fails
    "from cartograph.cli.main import main; main()"
)


def answer_on_disk() -> dict[str, Any]:
    return code_task.best_seller({p.name: p.read_text() for p in sorted(ORDERS.glob("*.csv"))})


def context(state: Path, client: Client) -> steps.DemoContext:
    config = steps.load_demo_config(CONFIG, state)
    ctx = steps.DemoContext(CONFIG, config, json_out=False)
    ctx.client = client
    return ctx


def test_the_demo_config_lists_run_after_the_three_proxy_tools() -> None:
    config = steps.load_demo_config(CONFIG, None)
    assert steps.expected_proxy_tools(config) == ["discover", "status", "call", "run"]


def test_the_orders_have_one_clear_best_seller() -> None:
    answer = answer_on_disk()
    assert answer["files"] == ["2026-03.csv", "2026-04.csv"]
    assert answer["top_item"] == "espresso" and answer["orders"] == 80


async def test_one_run_gives_the_step_by_step_answer_in_fewer_round_trips_and_tokens(
    attested_state: Path,
    http_port: int,
    serve_log: TextIO,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(DEMO_HTTP_PORT_ENV, str(http_port))
    with anyio.fail_after(240):
        async with agent.proxy_client(CONFIG, state_dir=attested_state, errlog=serve_log) as client:
            ctx = context(attested_state, client)
            await steps.step_code(ctx)
    result = ctx.results["code_mode"]
    assert ctx.checks == [{"check": code_task.CHECK, "ok": True, "detail": result_detail()}]
    assert result["run"]["answer"] == result["steps"]["answer"] == answer_on_disk()
    assert (result["steps"]["round_trips"], result["run"]["round_trips"]) == (4, 2)
    assert sorted(line.split()[:2] for line in result["inner_calls"]) == [
        ["filesystem/list_directory", "ok"],
        ["filesystem/read_text_file", "ok"],
        ["filesystem/read_text_file", "ok"],
    ]
    assert result["tokens"] == "cl100k_base"
    # Both files pass through the step-by-step agent's context, not the run's.
    files = sum(tokens_of(p.read_text()) for p in ORDERS.glob("*.csv"))
    assert result["steps"]["read_tokens"] > result["run"]["read_tokens"] + files // 2
    assert json.dumps(result)  # --json prints it
    shown = capsys.readouterr().out
    assert "4 round trips" in shown and "2 round trips" in shown and "the same both ways" in shown


def result_detail() -> str:
    return code_task.describe(answer_on_disk())


def tokens_of(text: str) -> int:
    count = tokens.cl100k()
    assert count is not None, "the dev environment has cartograph[demo]"
    return count(text)


async def test_without_the_sandbox_the_step_says_so_and_is_skipped(
    attested_state: Path,
    http_port: int,
    serve_log: TextIO,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(DEMO_HTTP_PORT_ENV, str(http_port))
    served = agent.serve_parameters(CONFIG, state_dir=attested_state)
    assert served.args[:2] == ["-m", "cartograph.cli.main"]
    blocked = served.model_copy(update={"args": ["-c", NO_SANDBOX, *served.args[2:]]})
    with anyio.fail_after(240):
        transport = stdio_client(blocked, serve_log)
        async with Client(transport, read_timeout_seconds=agent.REQUEST_TIMEOUT) as client:
            ctx = context(attested_state, client)
            await steps.step_code(ctx)
    assert ctx.checks == []  # nothing fails: the demo's exit status is untouched
    skipped = ctx.results["code_mode"]["skipped"]
    assert "cartograph[code]" in skipped and "not installed" in skipped
    assert "skipped: the sandbox is not installed" in capsys.readouterr().out
