"""The bounds that make learning safe to leave on, each proved on real cards and a real log.

Only verified, servable tools are promoted; at least two of the k results are
the zero-shot ranker's; only successful calls count; a tool's evidence is
dropped when its card entry changes; nothing crosses catalogs, not even the
retention count; a task holds at most ``max_calls_per_task`` calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog
from cartograph.config.model import DEFAULT_MAX_CALLS_PER_TASK, LearningConfig
from cartograph.index.discover import discover
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.index.tool_index import ToolIndex
from cartograph.learning.catalog import CatalogLearning
from cartograph.learning.learner import blend
from cartograph.learning.sqlite import SqliteUsageStore
from tests.index.retrieval_fixtures import small_catalog

TASK = "draw a bar chart image from numbers"
SIMILAR = "draw a bar chart image from these numbers"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def cards() -> VerifiedCards:
    return attest_with_unsafe_throwaway_key(small_catalog())


@pytest.fixture
def index(cards: VerifiedCards) -> ToolIndex:
    return ToolIndex.build(cards, FakeEmbedder())


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "usage.sqlite3"


def learning(path: Path, catalog: str = "default", **config: object) -> CatalogLearning:
    return CatalogLearning(
        SqliteUsageStore(path),
        catalog=catalog,
        embedder=FakeEmbedder(),
        config=LearningConfig(**config),
    )


def tools(
    index: ToolIndex, cards: VerifiedCards, task: str, reranker: object, k: int = 5
) -> list[str]:
    found = discover(index, cards, task, k=k, reranker=reranker)  # type: ignore[arg-type]
    return [f"{t.server}/{t.tool}" for t in found.tools]


async def use(
    learner: CatalogLearning,
    index: ToolIndex,
    cards: VerifiedCards,
    task: str,
    *called: tuple[str, str, str],
) -> None:
    """One agent turn: discover ``task``, then call each (server, tool, outcome)."""
    found = discover(index, cards, task, k=5, reranker=learner)
    await learner.record_discover("s1", task, [(t.server, t.tool) for t in found.tools])
    for server, tool, outcome in called:
        await learner.record_call("s1", server, tool, outcome)


@pytest.mark.anyio
async def test_a_successful_call_promotes_its_tool_for_a_similar_task(
    log: Path, index: ToolIndex, cards: VerifiedCards
) -> None:
    learner = learning(log)
    await learner.sync(cards)
    before = tools(index, cards, SIMILAR, learner)
    assert before.index("weather/get_alerts") > 2
    await use(learner, index, cards, TASK, ("weather", "get_alerts", "ok"))
    after = tools(index, cards, SIMILAR, learner)
    assert after.index("weather/get_alerts") < before.index("weather/get_alerts")
    assert after[:1] == before[:1] or "weather/get_alerts" in after[:3]
    learner.close()


@pytest.mark.anyio
async def test_failed_calls_do_not_count(log: Path, index: ToolIndex, cards: VerifiedCards) -> None:
    learner = learning(log)
    await learner.sync(cards)
    before = tools(index, cards, SIMILAR, learner)
    for outcome in ("tool_error", "upstream_timeout", "bad_arguments", "cancelled"):
        await use(learner, index, cards, TASK, ("weather", "get_alerts", outcome))
    assert tools(index, cards, SIMILAR, learner) == before
    status = learner.store.status()
    assert status.calls == 4 and "ok" not in status.outcomes  # logged, but no evidence
    learner.close()
    reopened = learning(log)
    await reopened.sync(cards)
    assert reopened.status()["tasks_in_memory"] == 0
    reopened.close()


@pytest.mark.anyio
async def test_evidence_is_dropped_when_the_tools_card_entry_changes(
    log: Path, index: ToolIndex, cards: VerifiedCards
) -> None:
    learner = learning(log)
    await learner.sync(cards)
    await use(
        learner, index, cards, TASK, ("weather", "get_alerts", "ok"), ("files", "read_file", "ok")
    )
    promoted = tools(index, cards, SIMILAR, learner, k=6)  # k=6: the whole catalog
    learner.close()

    changed = small_catalog().model_dump(by_alias=True)
    changed["servers"][0]["tools"][1]["description"] = "Severe weather warnings for an area."
    new_cards = attest_with_unsafe_throwaway_key(Catalog.model_validate(changed))
    new_index = ToolIndex.build(new_cards, FakeEmbedder())
    restarted = learning(log)
    await restarted.sync(new_cards)
    (evidence,) = restarted.store.evidence("default", FakeEmbedder().model_id, limit=10)
    assert evidence.tools == (("files", "read_file"),)  # get_alerts' evidence is gone
    zero_shot = tools(new_index, new_cards, SIMILAR, None, k=6)
    after = tools(new_index, new_cards, SIMILAR, restarted, k=6)
    assert after.index("weather/get_alerts") == zero_shot.index("weather/get_alerts")
    assert promoted.index("weather/get_alerts") < after.index("weather/get_alerts")
    restarted.close()


@pytest.mark.anyio
async def test_only_tools_the_index_serves_are_promoted(log: Path, cards: VerifiedCards) -> None:
    learner = learning(log)
    await learner.sync(cards)
    full = ToolIndex.build(cards, FakeEmbedder())
    await use(learner, full, cards, TASK, ("weather", "get_alerts", "ok"))
    # get_alerts drifted (or is denied by policy): the index no longer holds it.
    served = ToolIndex.build(cards, FakeEmbedder(), exclude=[("weather", "get_alerts")])
    assert "weather/get_alerts" not in tools(served, cards, SIMILAR, learner, k=5)
    # A tool no card covers cannot be promoted either, whatever the log says.
    await learner.record_discover("s2", TASK, [])
    await learner.record_call("s2", "ghost", "exfiltrate", "ok")
    assert all(not t.startswith("ghost/") for t in tools(full, cards, SIMILAR, learner))
    learner.close()


@pytest.mark.anyio
async def test_nothing_crosses_catalogs(log: Path, index: ToolIndex, cards: VerifiedCards) -> None:
    a, b = learning(log, "a"), learning(log, "b")  # one log file, two catalogs
    await a.sync(cards)
    await b.sync(cards)
    before = tools(index, cards, SIMILAR, b)
    for _ in range(3):
        await use(a, index, cards, TASK, ("weather", "get_alerts", "ok"))
    assert tools(index, cards, SIMILAR, a) != before
    assert tools(index, cards, SIMILAR, b) == before
    b.close()
    reopened = learning(log, "b")
    await reopened.sync(cards)
    assert tools(index, cards, SIMILAR, reopened) == before
    a.close()
    reopened.close()


@pytest.mark.anyio
async def test_the_zero_shot_top_two_stay_in_every_result(
    log: Path, index: ToolIndex, cards: VerifiedCards
) -> None:
    learner = learning(log, vote_weight=50.0, text_weight=50.0)
    await learner.sync(cards)
    zero_shot = tools(index, cards, TASK, None, k=3)
    others = [t for t in tools(index, cards, TASK, None, k=6) if t not in zero_shot[:2]]
    called = [(*t.split("/"), "ok") for t in others]
    for _ in range(5):
        await use(learner, index, cards, TASK, *called)  # type: ignore[arg-type]
    for k in (2, 3, 5):
        learned = tools(index, cards, TASK, learner, k=k)
        assert set(zero_shot[:2]) <= set(learned)
        assert learned != tools(index, cards, TASK, None, k=k) or k == 2
    assert tools(index, cards, TASK, learner, k=1) == zero_shot[:1]
    learner.close()


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_blend_keeps_the_reserved_slots_whatever_the_bonus(k: int) -> None:
    ranked = [(i, 10.0 - i) for i in range(10)]
    learned = {i: 1000.0 + i for i in range(2, 12)}  # every other tool hugely boosted
    out = blend(ranked, learned, k, slots=2)
    assert {0, 1} & set(range(min(k, 2))) <= {p for p, _ in out[:k]}
    assert len(out) == len(ranked)
    assert len({p for p, _ in out}) == len(out)


def test_blend_without_evidence_is_the_zero_shot_ranking() -> None:
    ranked = [(3, 2.0), (1, 1.5), (0, 0.2)]
    assert blend(ranked, {}, 2, slots=2) is ranked


def test_the_learner_defaults_are_the_configs() -> None:
    from cartograph.learning.learner import LearningParams

    assert LearningParams() == LearningParams.from_config(LearningConfig())


def test_the_learner_holds_at_most_its_capacity_and_forgets_the_oldest_first() -> None:
    import numpy as np

    from cartograph.learning.learner import Learner, LearningParams

    learner = Learner(4, LearningParams(capacity=10, text_weight=1.0, vote_weight=0.0))
    for number in range(25):
        vector = np.eye(4, dtype=np.float32)[number % 4]
        learner.add(number, vector, f"word{number}", ("s", f"t{number}"))
    assert learner.tasks <= 10
    assert learner.scores(np.eye(4, dtype=np.float32)[0], "word0") == {}  # evicted, words too
    assert learner.scores(np.eye(4, dtype=np.float32)[0], "word24") == {("s", "t24"): 1.0}


@pytest.mark.anyio
async def test_one_catalogs_traffic_never_evicts_another_catalogs_evidence(
    log: Path, index: ToolIndex, cards: VerifiedCards
) -> None:
    """With the limit at 50, five tasks of a quiet catalog outlive 300 of a busy one."""
    unlimited = {"max_tasks": 50, "max_evidence_per_minute": 1_000}
    quiet, busy = learning(log, "quiet", **unlimited), learning(log, "busy", **unlimited)
    await quiet.sync(cards)
    await busy.sync(cards)
    for _ in range(5):
        await use(quiet, index, cards, TASK, ("weather", "get_alerts", "ok"))
    for number in range(300):  # past PRUNE_EVERY (256): the busy catalog prunes
        await busy.record_discover("s1", f"{TASK} {number}", [])
    quiet.close()
    restarted = learning(log, "quiet", **unlimited)
    await restarted.sync(cards)  # prunes again, at start
    assert restarted.status()["tasks_in_memory"] == 5
    assert restarted.store.status().catalogs == {"busy": 50, "quiet": 5}  # busy: at its max
    busy.close()
    restarted.close()


@pytest.mark.anyio
async def test_a_task_logs_at_most_max_calls_per_task_calls_and_no_more_evidence(
    log: Path, index: ToolIndex, cards: VerifiedCards
) -> None:
    capped = learning(log, "capped", max_calls_per_task=2)
    await capped.sync(cards)
    before = tools(index, cards, SIMILAR, capped)
    failed = ("weather", "get_alerts", "tool_error")
    await use(capped, index, cards, TASK, failed, failed, ("weather", "get_alerts", "ok"))
    assert capped.store.status().calls == 2  # the third call is past the cap: not logged
    assert capped.status()["tasks_in_memory"] == 0  # nor counted
    assert tools(index, cards, SIMILAR, capped) == before
    capped.close()


@pytest.mark.anyio
async def test_one_discover_then_a_flood_of_calls_logs_the_default_cap(
    log: Path, index: ToolIndex, cards: VerifiedCards
) -> None:
    flooded = learning(log, max_evidence_per_minute=1_000)
    await flooded.sync(cards)
    await use(flooded, index, cards, TASK, *[("weather", "get_alerts", "tool_error")] * 100)
    (row,) = flooded.store.export()
    assert len(row["calls"]) == DEFAULT_MAX_CALLS_PER_TASK == 64
    flooded.close()


def test_the_per_task_cap_is_at_least_one() -> None:
    with pytest.raises(ValidationError):
        LearningConfig(max_calls_per_task=0)
    assert LearningConfig(max_calls_per_task=1).max_calls_per_task == 1
