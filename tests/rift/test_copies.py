"""Name-only copies: one tool under several names is HIGH and REGENERATE, and fails the gate.

Cards here are the real ones: template cards generated from a catalog and
attested (``rift --catalog``, or ``attest_with_unsafe_throwaway_key``), as
the proxy serves them.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cli.main import build_app
from cartograph.cli.rift import EXIT_GATE_FAILED
from cartograph.rift.analysis import EmbedFn, RiftTool, analyse, tools_from_cards
from cartograph.rift.copies import Copyable, name_only_copy
from cartograph.rift.model import RiftSettings
from cartograph.rift.queries import Probe
from cartograph.rift.regenerate import planned_rewrites
from tests.rift.support import cards_with_text, catalog_of, explicit_embed, schema

DESCRIPTION = "Returns the contents of a document stored in the team's knowledge base."
DOC_ID = {
    "type": "object",
    "properties": {"doc_id": {"type": "string", "description": "Identifier of the document"}},
    "required": ["doc_id"],
}


def _server(name: str, tool: str, description: str = DESCRIPTION) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Team knowledge base",
        "tools": [{"name": tool, "description": description, "inputSchema": DOC_ID}],
    }


# A popular tool and two near-copies on other servers: the same publisher text and
# schema under new names. Before the rule this was one MEDIUM cluster (each copy's
# name-bearing probe wins its own card by a hair) and `--fail-on high` passed.
THREE_COPIES = {
    "servers": [
        _server("kb", "read_document"),
        _server("wiki", "fetch_document"),
        _server("notes", "get_document"),
    ]
}


@pytest.fixture(autouse=True)
def _no_ambient_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CARTOGRAPH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)


def _rift(tmp_path: Path, body: dict[str, Any], *extra: str) -> Result:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(body))
    args = ["rift", "--catalog", str(catalog), "--embedder", "fake", *extra]
    return CliRunner().invoke(build_app(), args)


@pytest.mark.promise("P-RIFT-1")
def test_three_tools_identical_but_for_the_name_fail_the_high_gate(tmp_path: Path) -> None:
    result = _rift(tmp_path, THREE_COPIES, "--fail-on", "high")
    assert result.exit_code == EXIT_GATE_FAILED, result.output
    assert "rift gate failed" in result.stderr
    for key in ("kb/read_document", "wiki/fetch_document", "notes/get_document"):
        assert key in result.stderr
    assert "one tool under 3 names" in result.stderr


def test_each_copy_is_regenerate_and_told_to_say_how_it_differs(tmp_path: Path) -> None:
    report = json.loads(_rift(tmp_path, THREE_COPIES, "--json").stdout)
    (cluster,) = report["clusters"]
    assert cluster["risk"] == "HIGH"
    assert all(m["regenerate"] for m in cluster["members"])
    copies = {m["tool"]: set(m["copies"]) for m in cluster["members"]}
    assert copies["read_document"] == {"wiki/fetch_document", "notes/get_document"}
    advice = {s["tool"]: s for s in cluster["suggestions"]}
    assert set(advice) == {"read_document", "fetch_document", "get_document"}
    for tool, s in advice.items():
        assert s["kind"] == "override"
        assert "says how it differs" in s["text"]
        override = tomllib.loads(s["fix"])
        (server,) = override["servers"]
        description = override["servers"][server]["tools"][tool]["description"]
        assert description.startswith(f"<say what {tool} does that ")


def test_the_papers_settings_do_not_apply_the_copy_rule(tmp_path: Path) -> None:
    report = json.loads(_rift(tmp_path, THREE_COPIES, "--json", "--paper").stdout)
    assert report["settings"]["copies"] is False
    assert all(not m["copies"] for c in report["clusters"] for m in c["members"])


def _copyable(catalog_body: dict[str, Any]) -> list[Copyable]:
    from cartograph.catalog.model import Catalog

    cards = attest_with_unsafe_throwaway_key(Catalog.model_validate(catalog_body))
    return [_as_copyable(t) for t in tools_from_cards(cards)]


def _as_copyable(tool: RiftTool) -> Copyable:
    return Copyable(tool.tool, tool.text, tool.published, tool.argument_names)


def test_template_cards_restating_each_name_are_still_copies() -> None:
    a, b = _copyable({"servers": [_server("kb", "read_document"), _server("w", "fetch_doc")]})
    assert a.text != b.text  # "Fetch the document." vs "Read the document."
    assert name_only_copy(a, b)


def test_template_cards_that_fill_the_object_from_an_argument_are_still_copies() -> None:
    # BFCL: "Currency conversion." beside "Convert the amount in currency conversion."
    amount = {
        "type": "object",
        "properties": {"amount": {"type": "number"}, "to_currency": {"type": "string"}},
        "required": ["amount", "to_currency"],
    }
    servers = []
    for server, tool in (("a", "currency_conversion"), ("b", "currency_conversion_convert")):
        body = _server(server, tool, "Convert a value from one currency to another.")
        body["tools"][0]["inputSchema"] = amount
        servers.append(body)
    a, b = _copyable({"servers": servers})
    assert "amount" in b.text.split(".")[0] and "amount" not in a.text.split(".")[0]
    assert name_only_copy(a, b)


def test_tools_the_publisher_did_not_describe_are_not_copies() -> None:
    # list_issues / list_pulls with no description: the names are all the publisher said.
    a, b = _copyable(
        {"servers": [_server("kb", "read_document", ""), _server("w", "fetch_doc", "")]}
    )
    assert not name_only_copy(a, b)


def test_a_different_schema_or_the_same_name_is_not_a_copy() -> None:
    other = {**DOC_ID, "properties": {"path": {"type": "string"}}, "required": ["path"]}
    body = {"servers": [_server("kb", "read_document"), _server("w", "fetch_document")]}
    body["servers"][1]["tools"][0]["inputSchema"] = other
    a, b = _copyable(body)
    assert not name_only_copy(a, b)
    same = _copyable({"servers": [_server("kb", "read_document"), _server("w", "read_document")]})
    assert not name_only_copy(*same)


def _copies_with_operator_text(first: str, second: str) -> list[RiftTool]:
    catalog = catalog_of(
        {
            "kb": [("read_document", DESCRIPTION, schema(doc_id="document id"))],
            "wiki": [("fetch_document", DESCRIPTION, schema(doc_id="document id"))],
        }
    )
    texts = {"kb": {"read_document": first}, "wiki": {"fetch_document": second}}
    return tools_from_cards(cards_with_text(catalog, texts))


def test_an_override_that_says_how_they_differ_clears_the_copy() -> None:
    a, b = _copies_with_operator_text(
        "Reads the published version of a document.", "Fetches the draft of a document."
    )
    assert not name_only_copy(_as_copyable(a), _as_copyable(b))


def test_the_suggested_placeholder_pasted_unedited_clears_nothing() -> None:
    a, b = _copies_with_operator_text(
        f"<say what read_document does that fetch_document does not> {DESCRIPTION}",
        f"<say what fetch_document does that read_document does not> {DESCRIPTION}",
    )
    assert name_only_copy(_as_copyable(a), _as_copyable(b))


def test_copies_share_a_cluster_even_when_their_vectors_are_far_apart() -> None:
    # Cosine 0.2 between the two cards: Layer 1 alone would never group them.
    table = {
        "card a": [1.0, 0.0],
        "card b": [0.2, 0.98],
        "probe a": [1.0, 0.1],
        "probe b": [0.1, 1.0],
    }
    tools = [
        RiftTool("s", "read_document", "card a", Probe("probe a", "arguments"), published="p"),
        RiftTool("t", "fetch_document", "card b", Probe("probe b", "arguments"), published="p"),
    ]
    embed = explicit_embed(table)
    report = analyse(tools, embed, RiftSettings(), model_id="explicit")
    (cluster,) = report.clusters
    assert cluster.risk == "HIGH"
    assert cluster.margin_min is not None and cluster.margin_min > 0.3  # LOW by margins alone
    off = analyse(tools, embed, RiftSettings(copies=False), model_id="explicit")
    assert off.clusters == ()


def test_a_copy_stays_in_its_siblings_cluster_as_well() -> None:
    # Layer 1 groups a copy with a sibling on its own server; its copy elsewhere is
    # far from both. Both findings stand: the sibling confusion and the copy.
    table = {
        "card a": [1.0, 0.0, 0.0],
        "card s": [0.95, 0.31, 0.0],
        "card b": [0.2, 0.0, 0.98],
        "probe a": [1.0, 0.0, 0.1],
        "probe s": [0.9, 0.43, 0.0],
        "probe b": [0.1, 0.0, 1.0],
    }
    tools = [
        RiftTool("s", "read_document", "card a", Probe("probe a", "arguments"), published="p"),
        RiftTool("s", "list_sections", "card s", Probe("probe s", "arguments"), published="q"),
        RiftTool("t", "fetch_document", "card b", Probe("probe b", "arguments"), published="p"),
    ]
    report = analyse(tools, explicit_embed(table), RiftSettings(), model_id="explicit")
    groups = {frozenset(m.tool for m in c.members): c.risk for c in report.clusters}
    assert groups[frozenset({"read_document", "fetch_document"})] == "HIGH"
    assert frozenset({"read_document", "list_sections"}) in groups
    assert report.clustered_tools == 3


def test_regenerate_leaves_copies_to_a_written_override(fake_embed: EmbedFn) -> None:
    tools = _copies_with_operator_text(
        f"Read the document. {DESCRIPTION}", f"Fetch the document. {DESCRIPTION}"
    )
    report = analyse(tools, fake_embed, RiftSettings(), model_id="fake")
    texts = {t.key: t.text for t in tools}
    names = {t.key: t.argument_names for t in tools}
    rewrites, unresolved = planned_rewrites(report, texts, names)
    assert rewrites == []
    assert sorted(unresolved) == ["kb/read_document", "wiki/fetch_document"]
