"""`cartograph serve` with two catalogs on one usage log, readers running, then SIGKILL (P-LEARN-2).

The attack is the ordinary operator's: two ``[[catalogs]]`` in one proxy (so
two learners on one log file) and ``cartograph learning status`` run now and
then while agents work. Before the fix the second catalog's open dropped the
process's SQLite locks, the first ``status`` to close deleted the live WAL,
later rows were invisible to readers and lost at the kill.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from cartograph.learning.sqlite import SqliteUsageStore, usage_log_path
from tests.helpers.serving import serve_http
from tests.helpers.support import scriptable, toml_for
from tests.http.support import mcp_client

CATALOGS = ("a", "b")
STATUS = (sys.executable, "-m", "cartograph.cli.main", "learning", "status")
ROUNDS = 3
"""``learning status`` runs while the agents write."""
BETWEEN = 15
"""Answered discover + call pairs (all agents) before each reader, and after the last."""


def write_config(tmp_path: Path) -> Path:
    body = toml_for(tmp_path / "state", scriptable("calc"), learning=True)
    # One principal (stdio: no tokens) writes every row here: lift its rate limit.
    body = body.replace("enabled = true", "enabled = true\nmax_evidence_per_minute = 100000", 1)
    for name in CATALOGS:
        body += f'\n[[catalogs]]\nname = "{name}"\nservers = ["calc"]\n'
    path = tmp_path / "cartograph.toml"
    path.write_text(body)
    return path


class Answered:
    """What the agents got answers for: per task text, how many calls were answered."""

    def __init__(self) -> None:
        self.tasks: Counter[str] = Counter()
        self.pairs = 0
        self.killed = False
        self._waiting: list[tuple[int, anyio.Event]] = []

    def discover(self, task: str) -> None:
        self.tasks[task] += 0  # present, no calls yet

    def call(self, task: str) -> None:
        self.tasks[task] += 1
        self.pairs += 1
        for target, event in self._waiting:
            if self.pairs >= target:
                event.set()

    async def reach(self, pairs: int) -> None:
        event = anyio.Event()
        self._waiting.append((pairs, event))
        if self.pairs >= pairs:
            event.set()
        await event.wait()


async def agent(url: str, catalog: str, answered: Answered) -> None:
    """Discover a new task, call a tool for it, again, until cancelled.

    With two catalogs the proxy tools carry the catalog's prefix (``a_discover``).
    """
    echo = {"server": "calc", "tool": "echo", "arguments": {"text": "hi"}}
    try:
        async with mcp_client(url) as client:
            for number in range(1_000_000):
                task = f"increment the {catalog} counter, turn {number}"
                found = await client.call_tool(f"{catalog}_discover", {"task": task, "k": 3})
                assert not found.is_error
                answered.discover(task)
                result = await client.call_tool(f"{catalog}_call", echo)
                assert not result.is_error
                answered.call(task)
    except Exception:
        if not answered.killed:
            raise  # the request in flight at the kill fails: that one was never answered


def status(config: Path) -> dict[str, Any]:
    """``cartograph learning status --json`` as its own process, as an operator runs it."""
    done = subprocess.run(
        [*STATUS, "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.mark.anyio
@pytest.mark.promise("P-LEARN-2")
async def test_attack_status_while_serving_two_catalogs_loses_no_row(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    answered = Answered()
    with serve_http(config) as served:
        with anyio.fail_after(240):
            async with anyio.create_task_group() as agents:
                for name in CATALOGS:
                    agents.start_soon(agent, f"{served.base}/mcp/{name}", name, answered)
                for round_ in range(1, ROUNDS + 1):
                    await answered.reach(BETWEEN * round_)
                    seen = len(answered.tasks)
                    report = await anyio.to_thread.run_sync(status, config)
                    assert report["tasks"] >= seen  # a reader sees every answered discover
                await answered.reach(answered.pairs + BETWEEN)  # rows after the last reader
                answered.killed = True
                served.signal(signal.SIGKILL)  # mid-write: the agents are still calling
                assert served.wait() == -signal.SIGKILL
                agents.cancel_scope.cancel()
    store = SqliteUsageStore(usage_log_path(tmp_path / "state"))  # quick_check: not corrupt
    try:
        logged = {row["task"]: len(row["calls"]) for row in store.export()}
    finally:
        store.close()
    missing = {task: calls for task, calls in answered.tasks.items() if task not in logged}
    assert not missing, f"{len(missing)} of {len(answered.tasks)} answered discovers lost"
    short = {task for task, calls in answered.tasks.items() if logged[task] < calls}
    assert not short, f"answered calls lost for {len(short)} tasks"
    assert {task.split()[2] for task in logged} == set(CATALOGS)
