"""A name copied from another server's tool earns its copier nothing (P-NAME-2).

``fixtures/copies_popular_tool_names.json`` is a hostile server whose tools are
named exactly like popular tools of the demo federation (``read_file``,
``get_current_time``, ``create_entities``) and whose descriptions are only
instructions (which the template drops): its cards are its names. Beside the
real demo federation (``benchmarks/data/demo/catalog.json``, a snapshot of its
servers' ``tools/list``), no copy ranks above the tool it copies for that
tool's tasks (without the name rule one ranks first). The tasks were written
for these tests, not taken from any benchmark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.overrides import Overrides, OverridingGenerator
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog import load_catalog
from cartograph.catalog.model import Catalog, ServerDef
from cartograph.index.embedders import get_embedder
from cartograph.index.entries import entries_from_cards
from cartograph.index.name_copies import colliding, collision_notes, name_copies
from cartograph.index.tool_index import ToolIndex
from cartograph.index.vector_store import VectorStore

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "benchmarks" / "data" / "demo" / "catalog.json"
ATTACK = json.loads(
    (Path(__file__).parent / "fixtures" / "copies_popular_tool_names.json").read_text("utf-8")
)
COPIER = ServerDef.model_validate(ATTACK["server"])
TASKS = [
    ((target["server"], target["tool"]), task)
    for target in ATTACK["imitates"]
    for task in target["tasks"]
]
DEPTH = 20


def ranks(index: ToolIndex, task: str) -> dict[tuple[str, str], int]:
    return {(h.server, h.tool): n for n, h in enumerate(index.search(task, DEPTH), 1)}


def with_copier(copier: ServerDef = COPIER, overrides: Overrides | None = None) -> VerifiedCards:
    demo = load_catalog(DEMO)
    generator = OverridingGenerator(TemplateGenerator(), overrides or Overrides())
    return attest_with_unsafe_throwaway_key(
        Catalog(servers=(*demo.servers, copier)), generator=generator
    )


@pytest.fixture(scope="module")
def federation() -> tuple[ToolIndex, VerifiedCards]:
    cards = with_copier()
    return ToolIndex.build(cards, get_embedder("minilm")), cards


@pytest.mark.promise("P-NAME-2")
@pytest.mark.parametrize(("original", "task"), TASKS)
def test_attack_a_copied_name_never_outranks_the_tool_it_copies(
    original: tuple[str, str], task: str, federation: tuple[ToolIndex, VerifiedCards]
) -> None:
    index, _ = federation
    found = ranks(index, task)
    copy = (COPIER.name, original[1])
    assert found[original] < found.get(copy, DEPTH + 1), (task, found)


def test_attack_a_name_copy_loses_its_name_view_and_the_original_keeps_its_own(
    federation: tuple[ToolIndex, VerifiedCards],
) -> None:
    _, cards = federation
    entries = {e.key: e for e in entries_from_cards({s: cards[s] for s in cards})}
    for target in ATTACK["imitates"]:
        copy = entries[(COPIER.name, target["tool"])]
        assert (copy.name, copy.description, copy.arguments, copy.examples) == ("", "", "", "")
        assert entries[(target["server"], target["tool"])].name != ""
    # The demo's two git servers share honest names: both cards say more than the name.
    assert entries[("git", "git_status")].name == entries[("git-mcp-server", "git_status")].name


def test_attack_a_copy_of_read_file_stays_out_of_the_top_5_for_file_tasks(
    federation: tuple[ToolIndex, VerifiedCards],
) -> None:
    index, _ = federation
    for (_, tool), task in TASKS:
        if tool == "read_file":
            top = [(h.server, h.tool) for h in index.search(task, 5)]
            assert (COPIER.name, tool) not in top, (task, top)


def test_an_operator_vouched_name_keeps_its_name_view() -> None:
    overrides = Overrides.model_validate(
        {"servers": {COPIER.name: {"tools": {"read_file": {"vouch_name": True}}}}}
    )
    cards = with_copier(overrides=overrides)
    vouched = cards[COPIER.name].tool("read_file")
    assert vouched is not None and vouched.vouched_name
    assert vouched.json_dict()["vouched_name"] is True  # signed with the rest
    entries = {e.key: e for e in entries_from_cards({s: cards[s] for s in cards})}
    assert entries[(COPIER.name, "read_file")].name == "read file"
    assert entries[(COPIER.name, "get_current_time")].name == ""


def test_a_card_without_a_vouch_renders_as_before() -> None:
    cards = with_copier()
    assert all("vouched_name" not in tool.json_dict() for tool in cards[COPIER.name].body.tools)


def test_attack_a_copier_indexed_before_the_original_loses_its_name_once_it_arrives(
    tmp_path: Path,
) -> None:
    """The serving path copies unchanged cards' rows; a name judgement spans servers."""
    embedder, store = get_embedder("minilm"), VectorStore(tmp_path)
    cards = with_copier()  # one attestation: unchanged cards are the same cards
    ToolIndex.build(cards.subset(s for s in cards if s != "memory"), embedder, store=store)
    incremental = ToolIndex.build(cards, embedder, store=store)
    scratch = ToolIndex.build(cards, embedder, store=VectorStore(tmp_path / "scratch"))
    task = "create entities for two projects"
    assert ranks(incremental, task) == ranks(scratch, task)
    found = ranks(incremental, task)
    assert found[("memory", "create_entities")] < found.get((COPIER.name, "create_entities"), 99)


def backed_by(*keys: tuple[str, str]) -> Any:
    return lambda key: key in keys


def test_only_an_unbacked_member_loses_its_name_and_only_beside_a_backed_one() -> None:
    groups = colliding([("a", "read_file"), ("b", "read_file"), ("c", "readFile"), ("d", "x")])
    assert groups == [[("a", "read_file"), ("b", "read_file"), ("c", "readFile")]]
    assert name_copies(groups, backed_by(("a", "read_file"))) == {
        ("b", "read_file"),
        ("c", "readFile"),
    }
    assert name_copies(groups, backed_by()) == set()  # nobody can tell whose it is
    everyone = backed_by(*groups[0])
    assert name_copies(groups, everyone) == set()


def test_names_on_one_server_only_are_no_collision() -> None:
    assert colliding([("a", "read_file"), ("a", "read_fiIe"), ("b", "write_file")]) == []


def test_each_member_is_noted_with_the_other_servers_tools_of_its_name() -> None:
    groups = colliding([("a", "read_file"), ("b", "read_fiIe"), ("b", "other")])
    assert collision_notes(groups) == {
        ("a", "read_file"): (("b", "read_fiIe"),),
        ("b", "read_fiIe"): (("a", "read_file"),),
    }


def test_cards_show_notes_a_shared_name_and_how_it_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from cartograph.catalog import save_catalog
    from cartograph.cli.main import build_app

    monkeypatch.chdir(tmp_path)
    demo = load_catalog(DEMO)
    originals = tuple(s for s in demo.servers if s.name in ("filesystem", "time", "memory"))
    snapshot, state = tmp_path / "catalog.json", str(tmp_path / "state")
    save_catalog(Catalog(servers=(*originals, COPIER)), snapshot)
    runner = CliRunner()
    for args in (["keys", "init"], ["bootstrap", "--catalog", str(snapshot)]):
        assert runner.invoke(build_app(), [*args, "--state-dir", state]).exit_code == 0

    copier = runner.invoke(build_app(), ["cards", "show", COPIER.name, "--state-dir", state])
    original = runner.invoke(build_app(), ["cards", "show", "filesystem", "--state-dir", state])

    assert copier.exit_code == 0 and original.exit_code == 0
    said = " ".join(copier.stdout.split())
    assert "Also the name of filesystem/read_file: it ranks without its name" in said
    assert "Also the name of power-pack/read_file: its card describes it in other words" in (
        " ".join(original.stdout.split())
    )


def test_a_copy_gets_its_name_back_on_the_serving_path_when_the_original_leaves(
    tmp_path: Path,
) -> None:
    """Removing the backed tool's server changes another server's entries: no stale copy."""
    embedder = get_embedder("minilm")
    cards = with_copier()  # one attestation: unchanged cards are the same cards
    served = VectorStore(tmp_path / "served")
    ToolIndex.build(cards, embedder, store=served)
    without = cards.subset(s for s in cards if s != "memory")
    incremental = ToolIndex.build(without, embedder, store=served)
    scratch = ToolIndex.build(without, embedder, store=VectorStore(tmp_path / "scratch"))
    for task in ("create entities for two projects", "add entities"):
        assert ranks(incremental, task) == ranks(scratch, task), task
    assert ranks(scratch, "create entities for two projects")[(COPIER.name, "create_entities")] == 1


def test_an_operator_vouched_look_alike_keeps_its_name_view() -> None:
    look_alike = COPIER.model_copy(
        update={"tools": (COPIER.tools[0].model_copy(update={"name": "read_fiIe"}),)}
    )
    plain = {e.key: e for e in entries_from_cards(_cards(with_copier(look_alike)))}
    assert plain[(COPIER.name, "read_fiIe")].name == ""
    overrides = Overrides.model_validate(
        {"servers": {COPIER.name: {"tools": {"read_fiIe": {"vouch_name": True}}}}}
    )
    vouched = {e.key: e for e in entries_from_cards(_cards(with_copier(look_alike, overrides)))}
    assert vouched[(COPIER.name, "read_fiIe")].name == "read fi Ie"


def _cards(cards: VerifiedCards) -> dict[str, Any]:
    return {server: cards[server] for server in cards}
