"""Evidence belongs to the principal that logged it; nobody steers another principal alone.

The attack, measured before the fix: one token made 54 discover-then-call
pairs in under four seconds, all for one tool, and that tool became first for
5 of 18 unrelated tasks of another principal in the same catalog (0 before)
and top 5 for 16 of 18. Now a principal's ranking moves only by its own
evidence and by evidence ``min_principals`` distinct principals agree on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from pydantic import ValidationError

from cartograph.config.model import LearningConfig
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.learning.catalog import RATE_WINDOW, CatalogLearning
from cartograph.learning.learner import Learner, LearningParams, agreed, blend, clear_lead
from cartograph.learning.sqlite import SqliteUsageStore
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime.catalog import CatalogRuntime
from tests.helpers.support import config_for, scriptable

# Principal B's work: one task per tool of the scriptable server, in its own words.
TASKS = (
    "add two integers",
    "increment the session counter",
    "return the process id of the server",
    "sleep for the given seconds then answer",
    "report progress in steps",
    "return a large text after a delay",
    "send many list changed notifications",
    "kill the server process in the middle of a call",
    "reply with a broken message",
    "never answer the request",
    "change the description of a tool and announce it",
    "fail with the secret token of the environment",
    "create a file at a path then sleep until another file exists",
    "add the integers 2 and 40",
    "increment and return the counter of this session",
    "which process id does the server have",
    "sleep a few seconds before answering",
    "report the progress of a job in steps",
)
STEERED = "echo"
PAIRS = 54
ECHO = {"server": "calc", "tool": STEERED, "arguments": {"text": "hi"}}


@asynccontextmanager
async def proxy(state: Path, **learning: Any) -> AsyncIterator[ProxyHandlers]:
    config = config_for(state, scriptable("calc"), learning=True)
    # Every row logged: the agreement rule alone is under test (the rate limit has its own).
    settings = LearningConfig(enabled=True, max_evidence_per_minute=10_000, **learning)
    config = config.model_copy(update={"learning": settings})
    runtime = await CatalogRuntime.start(config, config.servers, unsafe_throwaway_key=True)
    try:
        yield ProxyHandlers(runtime, catalog="default")
    finally:
        await runtime.aclose()


async def ranked(handlers: ProxyHandlers, task: str, principal: str | None) -> list[str]:
    found: Any = await handlers.call_tool("discover", {"task": task, "k": 5}, principal=principal)
    return [t["tool"] for t in found.structured_content["tools"]]


async def rankings(handlers: ProxyHandlers, principal: str | None) -> dict[str, list[str]]:
    return {task: await ranked(handlers, task, principal) for task in TASKS}


async def steer(handlers: ProxyHandlers, principal: str, tasks: tuple[str, ...]) -> None:
    """``PAIRS`` discover-then-call pairs over ``tasks``, every call to the steered tool."""
    for number in range(PAIRS):
        await ranked(handlers, tasks[number % len(tasks)], principal)
        result = await handlers.call_tool("call", ECHO, principal=principal)
        assert not result.is_error


def place(tools: list[str], tool: str = STEERED) -> int:
    """1-based rank in a top-k list; k + 1 when absent."""
    return tools.index(tool) + 1 if tool in tools else len(tools) + 1


def firsts(by_task: dict[str, list[str]]) -> int:
    return sum(1 for tools in by_task.values() if tools[0] == STEERED)


@pytest.mark.anyio
@pytest.mark.promise("P-LEARN-1")
async def test_attack_one_principal_steers_everyone(tmp_path: Path) -> None:
    with anyio.fail_after(120):
        async with proxy(tmp_path / "state") as handlers:
            zero_shot = await rankings(handlers, "bob")
            assert firsts(zero_shot) == 0
            await steer(handlers, "mallory", TASKS)
            # The attacker's own ranking moved (its evidence is its own to use): the
            # steered tool climbs (first only where the zero-shot first has no clear
            # lead, which the head re-scoring now gives every one of these tasks) ...
            own = await rankings(handlers, "mallory")
            assert sum(place(own[t]) < place(zero_shot[t]) for t in TASKS) >= len(TASKS) // 2
            # ... everyone else's, including the local principal's, did not move at all.
            assert await rankings(handlers, "bob") == zero_shot
            assert await rankings(handlers, None) == zero_shot


@pytest.mark.anyio
@pytest.mark.promise("P-LEARN-1")
async def test_evidence_a_second_principal_agrees_on_moves_shared_rankings(
    tmp_path: Path,
) -> None:
    task, other = TASKS[1], TASKS[0]
    with anyio.fail_after(120):
        async with proxy(tmp_path / "state") as handlers:
            zero_shot = await ranked(handlers, task, "bob")
            untouched = await ranked(handlers, other, "bob")
            await steer(handlers, "mallory", (task,))
            assert await ranked(handlers, task, "bob") == zero_shot
            await steer(handlers, "alice", (task,))  # a second principal agrees
            shared = await ranked(handlers, task, "bob")
            assert place(shared) < place(zero_shot)
            assert set(zero_shot[:2]) <= set(shared)  # the zero-shot best two stay
            # Agreement is per task: bob's other tasks are left as they were.
            assert await ranked(handlers, other, "bob") == untouched


@pytest.mark.anyio
async def test_with_min_principals_1_any_principal_moves_everyone(tmp_path: Path) -> None:
    """The operator's opt-out, and the proof that the attack above is a real one."""
    with anyio.fail_after(120):
        async with proxy(tmp_path / "state", min_principals=1) as handlers:
            zero_shot = await rankings(handlers, "bob")
            await steer(handlers, "mallory", TASKS)
            steered = await rankings(handlers, "bob")
            moved = sum(1 for t in TASKS if place(steered[t]) < place(zero_shot[t]))
            assert moved >= len(TASKS) // 2


# -- the rule, the cap and the rate, each at its edge ---------------------------------------


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_a_shared_bonus_is_the_one_min_principals_principals_vouch_for() -> None:
    bonuses = {0: {("s", "a"): 0.9}, 1: {("s", "a"): 0.4, ("s", "b"): 0.7}, 2: {("s", "a"): 0.2}}
    assert agreed(bonuses, 5, 2) == {("s", "a"): 0.4}  # b has one voice: not shared
    assert agreed(bonuses, 5, 3) == {("s", "a"): 0.2}
    assert agreed(bonuses, 5, 4) == {}
    assert agreed(bonuses, 1, 2) == {("s", "a"): 0.4, ("s", "b"): 0.7}  # its own stays its own
    assert agreed(bonuses, 2, 2) == {("s", "a"): 0.4}  # the agreed level beats its own 0.2


def test_one_principals_many_tasks_do_not_crowd_out_anothers_neighbours() -> None:
    learner = Learner(3, LearningParams(neighbours=2, text_weight=0.0))
    task = unit(1, 0, 0)
    for number in range(50):  # fifty exact repeats by one principal
        learner.add(number, task, "a task", ("s", "steered"), "mallory")
    learner.add(100, unit(1, 0.2, 0), "a task", ("s", "own"), "bob")
    scores = learner.scores(task, "a task", "bob")
    assert set(scores) == {("s", "own")} and scores[("s", "own")] > 0
    assert learner.scores(task, "a task", "mallory") == {("s", "steered"): 1.0}


def test_a_zero_shot_first_tool_with_a_clear_lead_keeps_first_place() -> None:
    learned = {2: 5.0}  # a huge bonus for the third tool
    at_margin = [(0, 2.0), (1, 1.5), (2, 1.0)]  # lead (2.0 - 1.5) / 2.0 = 0.25: the margin
    assert clear_lead(at_margin, 0.25)
    out = blend(at_margin, learned, 3, slots=2, first_place_margin=0.25)
    assert [p for p, _ in out] == [0, 2, 1]  # lifted level with the first, never above
    assert out[0][1] == out[1][1] == 1.0
    below = [(0, 2.0), (1, 1.75), (2, 1.0)]  # lead 0.125: not clear
    assert not clear_lead(below, 0.25)
    assert [p for p, _ in blend(below, learned, 3, 2, 0.25)] == [2, 0, 1]
    assert [p for p, _ in blend(at_margin, learned, 3, 2, None)] == [2, 0, 1]  # no cap


def test_clear_lead_of_a_lone_or_scoreless_result() -> None:
    assert clear_lead([(0, 0.3)], 1.0) and not clear_lead([(0, 0.0), (1, 0.0)], 0.0)
    assert not clear_lead([], 0.0)


@pytest.mark.anyio
async def test_a_principal_logs_at_most_max_evidence_per_minute_rows(tmp_path: Path) -> None:
    now = [1000.0]
    learning = CatalogLearning(
        SqliteUsageStore(tmp_path / "usage.sqlite3"),
        catalog="default",
        embedder=FakeEmbedder(),
        config=LearningConfig(max_evidence_per_minute=3),
        clock=lambda: now[0],
    )
    try:
        await learning.record_discover("m", "a task", [], "mallory")  # row 1
        await learning.record_call("m", "calc", "echo", "ok")  # row 2
        await learning.record_discover("b", "a task", [], "bob")  # bob counts on his own
        await learning.record_discover("m", "a task", [], "mallory")  # row 3: at the limit
        await learning.record_discover("m", "b task", [], "mallory")  # row 4: not logged
        await learning.record_call("m", "calc", "echo", "ok")  # no open task: not logged
        assert learning.store.status().principals == {
            "bob": {"tasks": 1, "calls": 0},
            "mallory": {"tasks": 2, "calls": 1},
        }
        now[0] += RATE_WINDOW  # the window slid past the first rows
        await learning.record_discover("m", "c task", [], "mallory")
        await learning.record_call("m", "calc", "echo", "ok")
        assert learning.store.status().principals["mallory"] == {"tasks": 3, "calls": 2}
    finally:
        learning.close()


def test_the_rate_and_agreement_bounds_are_at_least_one() -> None:
    for field in ("min_principals", "max_evidence_per_minute"):
        with pytest.raises(ValidationError):
            LearningConfig(**{field: 0})
    with pytest.raises(ValidationError):
        LearningConfig(first_place_margin=1.5)
    defaults = LearningConfig()
    assert (defaults.min_principals, defaults.max_evidence_per_minute) == (2, 30)
    assert defaults.first_place_margin == 0.1
