"""`cartograph demo` end to end on the real demo federation (the README's first command)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.demo.support import CLI, CONFIG, INSTALLED, ROOT, SKIP_REASON

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not INSTALLED, reason=SKIP_REASON),
]

ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+09:00")


def run_demo(state: Path) -> dict[str, Any]:
    done = subprocess.run(
        [*CLI, "demo", "--json", "--config", str(CONFIG), "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo-command-state")


@pytest.fixture(scope="module")
def first_run(state: Path) -> dict[str, Any]:
    return run_demo(state)


def test_the_demo_connects_attests_verifies_and_serves_an_agent(first_run: dict[str, Any]) -> None:
    assert first_run["ok"], [c for c in first_run["checks"] if not c["ok"]]
    assert first_run["connect"]["connected"] >= 15
    assert first_run["connect"]["tools"] >= 200
    assert first_run["key"]["created"] is True
    assert first_run["bootstrap"]["written"] == first_run["connect"]["connected"]
    verify = first_run["verify"]
    assert verify["verified"] == first_run["connect"]["connected"]
    assert verify["failed"] == {} and verify["missing"] == []
    assert verify["signers"] == [first_run["key"]["key_id"]]
    agent = first_run["agent"]
    assert agent["proxy_tools"] == ["discover", "status", "call", "run"]
    time_task = next(d for d in agent["discover"] if "time" in d["task"])
    assert {"server": "time", "tool": "get_current_time"} in [
        {"server": t["server"], "tool": t["tool"]} for t in time_task["tools"]
    ]
    call = agent["call"]
    assert (call["server"], call["tool"], call["is_error"]) == ("time", "get_current_time", False)
    assert "Asia/Tokyo" in call["text"] and ISO_TIME.search(call["text"]), call["text"]
    assert agent["status"]["totals"]["tools_servable"] == first_run["connect"]["tools"]
    code = first_run["code_mode"]
    assert code["same_answer"] is True and code["run"]["answer"]["top_item"] == "espresso"
    assert (code["steps"]["round_trips"], code["run"]["round_trips"]) == (4, 2)
    assert "code" in first_run["timings"]


def test_a_rerun_reuses_the_key_cards_and_embeddings_unchanged(
    state: Path, first_run: dict[str, Any]
) -> None:
    cards, embeddings = files(state / "cards"), files(state / "embeddings")
    second = run_demo(state)
    assert second["ok"]
    assert second["key"] == {**first_run["key"], "created": False}
    assert (second["bootstrap"]["written"], second["bootstrap"]["failed"]) == (0, 0)
    assert files(state / "cards") == cards  # byte-identical, accepted-version record included
    assert files(state / "embeddings") == embeddings  # nothing re-embedded
