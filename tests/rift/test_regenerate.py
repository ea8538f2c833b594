"""`rift --regenerate`: REGENERATE tools get new text and a newly signed card."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from cartograph.cards.attest import build_body
from cartograph.cards.generators.base import ServerText, ToolText
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.keys import SigningKey, write_private_key
from cartograph.cards.loading import load_verified_for_config
from cartograph.cards.model import Capability
from cartograph.cards.paths import key_path, trust_path
from cartograph.cards.signing import sign_card
from cartograph.cards.store import CardStore
from cartograph.cards.trust import TrustSet, save_trust
from cartograph.catalog import save_catalog
from cartograph.cli.main import build_app
from cartograph.config.model import Config
from cartograph.errors import CardError
from cartograph.index.embedders import FakeEmbedder
from cartograph.rift.analysis import analyse, make_embed_fn, tools_from_cards
from cartograph.rift.model import RiftReport, RiftSettings
from cartograph.rift.regenerate import regenerate_tools
from cartograph.rift.runner import load_cards
from tests.rift.support import catalog_of, schema

SAME = "Looks up records in the archive and returns matching entries."
TOOLS = [
    ("fetch_invoice", "Fetch an invoice.", schema(number="invoice number")),
    ("fetch_receipt", "Fetch a receipt.", schema(shop="shop name")),
    ("fetch_contract", "Fetch a contract.", schema(party="counterparty")),
]


# Same words in their names and the same argument: nothing a statement could add separates them.
TWINS = [
    ("fetch_record", "Fetch a record.", schema(number="record number")),
    ("fetchRecord", "Fetch a record.", schema(number="record number")),
]


def _operator_state(tmp_path: Path, tools: list[Any] = TOOLS) -> Config:
    """A state dir holding an operator key, its trust set, and one card whose tools all say SAME."""
    catalog = catalog_of({"archive": tools})
    snapshot = tmp_path / "catalog.json"
    save_catalog(catalog, snapshot)
    config = Config(state_dir=tmp_path / "state", catalog=snapshot)
    key = SigningKey.generate()
    write_private_key(key, key_path(config))
    save_trust(TrustSet.of(key.public), trust_path(config))
    server = catalog.servers[0]
    text = ServerText(
        capability=Capability(summary="archive tools"),
        tools={t.name: ToolText(SAME, "", {}, dict(t.input_schema)) for t in server.tools},
    )
    body = build_body(server, text, TemplateGenerator().info, version=1)
    CardStore(config.state_dir).write(sign_card(body, key))
    return config


def _rift(config: Config) -> RiftReport:
    source = anyio.run(load_cards, config, None)
    embed = make_embed_fn(FakeEmbedder())
    return analyse(tools_from_cards(source.cards), embed, RiftSettings(), model_id="fake")


def test_regenerate_rewrites_every_regenerate_tool_and_re_signs_the_card(tmp_path: Path) -> None:
    config = _operator_state(tmp_path)
    before = _rift(config)
    assert [len(c.regenerate) for c in before.clusters] == [3]

    outcome = regenerate_tools(config, before)

    assert {r.tool for r in outcome.rewrites} == {t for t, _, _ in TOOLS}
    assert outcome.versions == {"archive": 2}
    cards = load_verified_for_config(config)  # verifies under the operator's trust set
    assert cards["archive"].version == 2
    texts = {t.name: t.description for t in cards["archive"].body.tools}
    assert texts["fetch_invoice"] == f"Use it to fetch invoice. {SAME}"
    assert all(text.endswith(SAME) for text in texts.values())
    after = _rift(config)
    assert all(not c.regenerate for c in after.clusters)
    assert "    - " + SAME in outcome.lines()
    assert f"    + Use it to fetch receipt. {SAME}" in outcome.lines()


def test_a_second_regenerate_run_changes_nothing_and_bumps_no_card(tmp_path: Path) -> None:
    config = _operator_state(tmp_path)
    regenerate_tools(config, _rift(config))
    before = CardStore(config.state_dir).read("archive")

    again = regenerate_tools(config, _rift(config))

    assert again.rewrites == [] and again.versions == {}
    after = CardStore(config.state_dir).read("archive")
    assert after.version == before.version == 2
    assert after == before


def test_tools_no_statement_can_separate_are_left_alone_and_listed(tmp_path: Path) -> None:
    config = _operator_state(tmp_path, tools=TWINS)
    outcome = regenerate_tools(config, _rift(config))
    assert outcome.rewrites == [] and outcome.versions == {}
    assert sorted(outcome.unresolved) == ["archive/fetchRecord", "archive/fetch_record"]
    assert CardStore(config.state_dir).read("archive").version == 1


def test_regenerate_refuses_cards_that_were_only_attested_in_memory(tmp_path: Path) -> None:
    config = _operator_state(tmp_path)
    report = _rift(config)
    empty = Config(state_dir=tmp_path / "elsewhere", catalog=config.catalog)
    with pytest.raises(CardError) as caught:
        regenerate_tools(empty, report)
    assert caught.value.code == "rift_regenerate_needs_cards"


def test_cli_regenerate_uses_the_configured_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _operator_state(tmp_path)
    toml = tmp_path / "cartograph.toml"
    toml.write_text(f'state_dir = "state"\ncatalog = "{config.catalog}"\n')
    monkeypatch.chdir(tmp_path)
    args = ["rift", "--config", str(toml), "--embedder", "fake", "--regenerate", "--json"]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cards"].startswith("signed cards in")
    assert "rewrote 3 tool description(s), re-signed 1 card(s)" in result.stderr
    assert CardStore(config.state_dir).read("archive").version == 2
