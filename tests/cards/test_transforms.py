"""Tool transforms at bootstrap: checked against the upstream, signed, drift-checked upstream.

The upstream here is the scriptable server's ``billing`` tool set as data (its
definitions, verbatim); the end-to-end calls through the live server are in
``tests/server/test_transforms.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cartograph.cards.attest import build_body
from cartograph.cards.canonical import canonical_digest
from cartograph.cards.digest import tool_digest, tool_pins
from cartograph.cards.drift import check_drift
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.keys import SigningKey
from cartograph.cards.model import Card, Pins, ToolCard
from cartograph.cards.overrides import (
    Overrides,
    OverridingGenerator,
    config_overrides,
    load_overrides,
)
from cartograph.cards.signing import parse_card, render_card, sign_card, verify_card
from cartograph.cards.transforms import describe_transform, reshape_server, served_server
from cartograph.cards.trust import TrustSet
from cartograph.cards.verified import VerifiedCards, fingerprint
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.config.loader import build_config
from cartograph.config.transforms import ToolTransform
from cartograph.errors import CardError, CartographError

BILLING = ServerDef(
    name="billing",
    tools=(
        ToolDef(
            name="create_invoice",
            description="Create an invoice for an account.",
            inputSchema={
                "type": "object",
                "properties": {
                    "account_id": {"type": "string", "description": "The account billed."},
                    "amount_cents": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
                    "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY"]},
                    "memo": {"type": "string"},
                    "region": {"type": "string"},
                },
                "required": ["account_id", "amount_cents", "currency"],
            },
        ),
        ToolDef(name="list_invoices", description="List the invoices of an account."),
    ),
)
SHAPE: dict[str, Any] = {
    "name": "bill_customer",
    "title": "Bill the customer",
    "args": {
        "account_id": {"env": "BILLING_ACCOUNT"},
        "amount_cents": {
            "name": "amount",
            "description": "Cents, at most 500 euros.",
            "maximum": 50_000,
        },
        "currency": {"enum": ["EUR", "USD"]},
        "region": {"value": "eu-west"},
        "memo": {"hide": True},
    },
}


def overrides(tool: str = "create_invoice", **shape: Any) -> Overrides:
    spec = shape or SHAPE
    return Overrides.model_validate({"servers": {"billing": {"tools": {tool: spec}}}})


def attested(server: ServerDef, found: Overrides) -> Card:
    """Bootstrap's path for one server: reshape, generate from the served shape, sign."""
    reshaped = reshape_server(server, found.tools_of(server.name))
    generator = OverridingGenerator(TemplateGenerator(), found)
    (text,) = generator.describe_all([served_server(server, reshaped)]).values()
    body = build_body(
        server,
        text,
        generator.info,
        version=1,
        overrides_digest=found.digest(server.name),
        reshaped=reshaped,
    )
    return sign_card(body, KEY)


KEY = SigningKey.generate()


def refusal(server: ServerDef, spec: dict[str, Any], tool: str = "create_invoice") -> str:
    with pytest.raises(CartographError) as caught:
        attested(server, overrides(tool, **spec))
    return caught.value.code


def test_the_card_holds_the_served_shape_and_the_upstream_pins() -> None:
    card = attested(BILLING, overrides())
    tool = card.body.tool("bill_customer")
    assert tool is not None and card.body.tool("create_invoice") is None
    assert tool.upstream_name == "create_invoice"
    assert tool.input_schema["required"] == ["amount", "currency"]
    props = tool.input_schema["properties"]
    assert set(props) == {"amount", "currency"}
    assert props["amount"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 50_000,
        "description": "Cents, at most 500 euros.",
    }
    assert props["currency"]["enum"] == ["EUR", "USD"]
    assert set(tool.example) <= {"amount", "currency"}
    for ranked in (tool.description, tool.arguments, *tool.examples):
        for upstream_only in ("account_id", "amount_cents", "region", "create_invoice"):
            assert upstream_only not in ranked
    assert (tool.digest, tool.pins) == (tool_digest(BILLING.tools[0]), tool_pins(BILLING.tools[0]))
    assert describe_transform(tool) == {
        "served": "bill_customer",
        "upstream": "create_invoice",
        "title": "Bill the customer",
        "renamed": {"amount": "amount_cents"},
        "hidden": {
            "account_id": "$BILLING_ACCOUNT",
            "memo": "never sent",
            "region": 'fixed "eu-west"',
        },
        "narrowed": {"amount": {"maximum": 50_000}, "currency": {"enum": ["EUR", "USD"]}},
    }


def test_the_served_shape_is_signed_so_changing_a_hidden_value_breaks_the_signature() -> None:
    card = attested(BILLING, overrides())
    trust = TrustSet.of(KEY.public)
    verify_card(parse_card(render_card(card)), trust, expected_server="billing")
    forged = render_card(card).replace(b'"eu-west"', b'"us-east"', 1)
    with pytest.raises(CardError) as caught:
        verify_card(parse_card(forged), trust, expected_server="billing")
    assert caught.value.code == "bad_signature"


def test_a_card_without_transforms_renders_exactly_as_before() -> None:
    card = attested(BILLING, Overrides())
    assert b'"transform"' not in render_card(card)
    assert all(t.transform is None for t in card.body.tools)
    # Learning keys its evidence by this fingerprint: the same value the code before
    # transforms computed for this entry, so an upgrade keeps every tool's evidence.
    pins = Pins(description="d", input_schema="i", output_schema="o", annotations="a", title="t")
    entry = ToolCard(name="add", description="Add.", digest="x", pins=pins, input_schema={})
    assert fingerprint(entry) == "464e66413adec47427a4539cd217d9423880fb99c3d49097e6c1d6f49aba2ce7"


def test_an_overrides_file_without_transforms_keeps_its_digest() -> None:
    """Written before transforms existed: same digest, so bootstrap keeps its cards."""
    found = Overrides.model_validate(
        {
            "servers": {
                "billing": {"summary": "Bills.", "tools": {"list_invoices": {"description": "d"}}}
            }
        }
    )
    before = {
        "summary": "Bills.",
        "guidance": None,
        "tags": None,
        "tools": {
            "list_invoices": {
                "description": "d",
                "arguments": None,
                "example": None,
                "when_to_use": None,
                "synonyms": None,
                "examples": None,
            }
        },
    }
    assert found.digest("billing") == canonical_digest(before)


@pytest.mark.parametrize(
    ("tool", "spec", "expected"),
    [
        ("send_invoice", {"name": "x"}, "override_unknown_tool"),
        ("create_invoice", {"args": {"account": {"env": "A"}}}, "transform_unknown_argument"),
        ("create_invoice", {"args": {"account_id": {"hide": True}}}, "transform_needs_value"),
        ("create_invoice", {"name": "list_invoices"}, "transform_name_collision"),
        ("create_invoice", {"name": "List-Invoices"}, "transform_name_collision"),
        ("create_invoice", {"args": {"memo": {"name": "region"}}}, "transform_name_collision"),
        (
            "create_invoice",
            {"args": {"currency": {"enum": ["EUR", "CHF"]}}},
            "transform_bad_narrowing",
        ),
        (
            "create_invoice",
            {"args": {"amount_cents": {"maximum": 20_000_000}}},
            "transform_bad_narrowing",
        ),
        ("create_invoice", {"args": {"memo": {"maximum": 5}}}, "transform_bad_narrowing"),
        ("create_invoice", {"args": {"amount_cents": {"value": "ten"}}}, "transform_bad_narrowing"),
    ],
    ids=[
        "unknown-tool",
        "unknown-argument",
        "hidden-required-without-value",
        "served-name-is-another-tool",
        "served-name-reads-as-another-tool",
        "served-argument-is-another-argument",
        "enum-value-the-upstream-refuses",
        "maximum-above-the-upstream-maximum",
        "maximum-on-a-string",
        "fixed-value-the-upstream-refuses",
    ],
)
def test_a_transform_that_does_not_fit_the_upstream_is_refused_at_bootstrap(
    tool: str, spec: dict[str, Any], expected: str
) -> None:
    assert refusal(BILLING, spec, tool) == expected


@pytest.mark.parametrize(
    "argument",
    [
        {"value": 1, "env": "A"},
        {"env": "A", "name": "acct"},
        {"hide": True, "enum": ["x"]},
        {"minimum": 5, "maximum": 1},
        {"env": "not a variable"},
    ],
    ids=["value-and-env", "hidden-with-name", "hidden-with-enum", "min-above-max", "bad-env"],
)
def test_a_malformed_transform_is_refused_where_it_is_written(
    tmp_path: Path, argument: dict[str, Any]
) -> None:
    raw = {"servers": {"billing": {"command": "x", "tools": {"t": {"args": {"a": argument}}}}}}
    with pytest.raises(CartographError) as caught:
        build_config(raw, source=tmp_path / "cartograph.toml", environ={})
    assert caught.value.code == "config_invalid"
    file = tmp_path / "overrides.toml"
    pairs = "\n".join(f"{k} = {_toml(v)}" for k, v in argument.items())
    file.write_text(f"[servers.billing.tools.t.args.a]\n{pairs}\n")
    with pytest.raises(CartographError) as caught:
        load_overrides(file)
    assert caught.value.code == "overrides_invalid"


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_the_config_section_is_merged_into_the_overrides_file_and_wins(tmp_path: Path) -> None:
    file = tmp_path / "overrides.toml"
    file.write_text(
        '[servers.billing.tools.create_invoice]\nname = "from_file"\nwhen_to_use = "Billing."\n'
    )
    raw = {
        "cards": {"overrides": str(file)},
        "servers": {"billing": {"command": "x", "tools": {"create_invoice": {"name": "invoice"}}}},
    }
    config = build_config(raw, source=tmp_path / "cartograph.toml", environ={})
    merged = config_overrides(config).servers["billing"].tools["create_invoice"]
    assert (merged.name, merged.when_to_use) == ("invoice", "Billing.")
    assert config.servers[0].tools["create_invoice"] == ToolTransform(name="invoice")


def test_drift_pins_the_upstream_definition_and_reports_the_served_name() -> None:
    card = attested(BILLING, overrides())
    cards = VerifiedCards(
        [(card, verify_card(card, TrustSet.of(KEY.public), expected_server="billing"))]
    )
    same = check_drift(cards, Catalog(servers=(BILLING,)))
    assert {(e.tool, e.status) for e in same} == {("bill_customer", "ok"), ("list_invoices", "ok")}

    changed = BILLING.tools[0].model_copy(update={"description": "Create an invoice. Now free!"})
    shadow = ToolDef(name="bill_customer", description="A new upstream tool under the served name.")
    moved = BILLING.model_copy(update={"tools": (changed, BILLING.tools[1], shadow)})
    drifted = check_drift(cards, Catalog(servers=(moved,)))
    assert [(e.tool, e.status, e.changed) for e in drifted] == [
        ("bill_customer", "drifted", ("description",)),
        ("list_invoices", "ok", ()),
    ]

    gone = BILLING.model_copy(update={"tools": (BILLING.tools[1],)})
    missing = check_drift(cards, Catalog(servers=(gone,)))
    assert ("bill_customer", "missing") in {(e.tool, e.status) for e in missing}
