"""The transform through the command line: the config section, bootstrap, show, tools, diff.

One live upstream (the scriptable server's ``billing`` tool set), configured in a
``cartograph.toml`` whose ``[servers.billing.tools.create_invoice]`` tables reshape it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.cli.main import build_app
from tests.helpers.support import scriptable, toml_for

runner = CliRunner()

RESHAPE = """
[servers.billing.tools.create_invoice]
name = "bill_customer"
title = "Bill the customer"

[servers.billing.tools.create_invoice.args.account_id]
env = "BILLING_ACCOUNT"

[servers.billing.tools.create_invoice.args.amount_cents]
name = "amount"
maximum = 50000

[servers.billing.tools.create_invoice.args.currency]
enum = ["EUR", "USD"]
"""


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(build_app(), list(args))
    return result.exit_code, result.stdout


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bootstrapped state directory whose billing card carries the transform."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "cartograph.toml"
    server = scriptable("billing", "--tools", "billing")
    path.write_text(toml_for(tmp_path / "state", server) + RESHAPE, encoding="utf-8")
    for args in (("keys", "init"), ("bootstrap",)):
        code, out = run(*args, "--config", str(path))
        assert code == 0, out
    return path


def test_bootstrap_signs_the_config_sections_transform_and_a_rerun_keeps_the_card(
    config: Path,
) -> None:
    code, out = run("bootstrap", "--config", str(config), "--json")
    assert code == 0
    assert [s["outcome"] for s in json.loads(out)["servers"]] == ["unchanged"]
    assert run("cards", "verify", "--config", str(config))[0] == 0


def test_cards_show_shows_the_transform(config: Path) -> None:
    code, out = run("cards", "show", "billing", "--config", str(config))
    assert code == 0
    for shown in (
        "bill_customer <- create_invoice",
        "amount <- amount_cents",
        "account_id: hidden, $BILLING_ACCOUNT",
        'currency: enum ["EUR", "USD"]',
    ):
        assert shown in " ".join(out.split()), shown
    code, out = run("cards", "show", "billing", "--config", str(config), "--json")
    (tool,) = [t for t in json.loads(out)["body"]["tools"] if t["name"] == "bill_customer"]
    assert tool["transform"]["upstream"] == "create_invoice"
    assert tool["transform"]["renamed"] == {"amount": "amount_cents"}


def test_tools_lists_the_served_shape_beside_the_upstream_name(config: Path) -> None:
    code, out = run("tools", "--config", str(config), "--json")
    assert code == 0
    by_name = {t["name"]: t for t in json.loads(out)}
    assert set(by_name) == {"bill_customer", "list_invoices"}
    served = by_name["bill_customer"]
    assert served["upstream"] == "create_invoice"
    assert served["title"] == "Bill the customer"
    assert set(served["inputSchema"]["properties"]) == {"amount", "currency", "memo", "region"}
    assert "upstream" not in by_name["list_invoices"]


def test_cards_diff_names_both_the_served_and_the_upstream_tool(
    config: Path, tmp_path: Path
) -> None:
    snapshot = tmp_path / "catalog.json"
    assert run("snapshot", "--config", str(config), "--out", str(snapshot))[0] == 0
    listed = json.loads(snapshot.read_text())
    (invoice,) = [t for t in listed["servers"][0]["tools"] if t["name"] == "create_invoice"]
    invoice["description"] = "Create an invoice. Free of charge!"
    snapshot.write_text(json.dumps(listed))

    code, out = run("cards", "diff", "--config", str(config), "--catalog", str(snapshot), "--json")
    assert code == 0
    found = json.loads(out)
    assert found["drift"]["problems"] == [
        {
            "server": "billing",
            "tool": "bill_customer",
            "status": "drifted",
            "changed": ["description"],
        }
    ]
    assert found["upstream_names"] == [
        {"server": "billing", "tool": "bill_customer", "upstream": "create_invoice"}
    ]
    (change,) = found["changes"]
    assert (change["upstream"], change["old"], change["new"]) == (
        "create_invoice",
        "Create an invoice for an account.",
        "Create an invoice. Free of charge!",
    )
    code, out = run("cards", "diff", "--config", str(config), "--catalog", str(snapshot))
    assert "bill_customer (upstream create_invoice)" in " ".join(out.split())
