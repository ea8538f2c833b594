"""Renamed and reshaped tools, end to end: bootstrap signs the served shape, `call` maps back.

One real upstream (the scriptable server's ``billing`` tool set, a subprocess) whose
``create_invoice`` answers with exactly the arguments it received. Its card is made the
way ``cartograph bootstrap`` makes it (the operator's key, the ``[servers.NAME.tools]``
config section), then served by a real runtime from the state directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cartograph.config.model import Config
from cartograph.config.transforms import ToolTransform
from cartograph.rift.analysis import tools_from_cards
from cartograph.rift.diagnosis import MemberText, override_text
from cartograph.stubs.generate import generate_stubs
from cartograph.stubs.shapes import tool_shapes
from tests.helpers.support import config_for, scriptable
from tests.server.support import call, code, signed_serving, text

ACCOUNT_ENV = "CARTOGRAPH_TEST_BILLING_ACCOUNT"
INVOICE: dict[str, Any] = {
    "name": "bill_customer",
    "title": "Bill the customer",
    "description": "Bill the current customer an amount in euros or dollars.",
    "args": {
        "account_id": {"env": ACCOUNT_ENV},
        "amount_cents": {
            "name": "amount",
            "description": "Amount in cents, at most 500 euros.",
            "maximum": 50_000,
        },
        "currency": {"enum": ["EUR", "USD"]},
        "region": {"value": "eu-west"},
    },
}


def billing_config(state_dir: Path, transform: dict[str, Any] | None = None) -> Config:
    """One billing upstream whose ``create_invoice`` the operator reshapes in the config."""
    tools = {"create_invoice": ToolTransform.model_validate(transform or INVOICE)}
    server = scriptable("billing", "--tools", "billing", tools=tools)
    return config_for(state_dir, server)


def upstream_saw(result: Any) -> dict[str, Any]:
    """What ``create_invoice`` received, as it answered it."""
    answer: dict[str, Any] = json.loads(text(result))
    return answer


@pytest.mark.anyio
@pytest.mark.promise("P-TOOL-2")
async def test_a_renamed_tool_is_found_by_its_served_name_and_the_upstream_gets_its_own_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ACCOUNT_ENV, "acct-42")
    async with signed_serving(billing_config(tmp_path)) as h:
        found = h.runtime.discover("bill the customer", 5)
        assert ("billing", "bill_customer") in {(t.server, t.tool) for t in found.tools}
        reply = await h.call_tool("discover", {"task": "bill the customer"}, principal=None)
        shown = text(reply)
        assert "bill_customer(" in shown and "amount" in shown
        for upstream_only in ("create_invoice", "account_id", "amount_cents", "region"):
            assert upstream_only not in shown
        result = await call(h, "billing", "bill_customer", amount=1200, currency="EUR", memo="m")
        assert not result.is_error, text(result)
        assert upstream_saw(result) == {
            "tool": "create_invoice",
            "arguments": {
                "account_id": "acct-42",
                "amount_cents": 1200,
                "currency": "EUR",
                "memo": "m",
                "region": "eu-west",
            },
        }


@pytest.mark.anyio
@pytest.mark.promise("P-TOOL-2")
async def test_a_hidden_argument_cannot_be_set_by_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ACCOUNT_ENV, "acct-42")
    async with signed_serving(billing_config(tmp_path)) as h:
        for hidden in ({"account_id": "acct-evil"}, {"region": "us-east"}):
            refused = await call(h, "billing", "bill_customer", amount=1, currency="EUR", **hidden)
            assert code(refused) == "argument_hidden", text(refused)
        assert h.runtime.gateway.guard("billing").calls == 0


@pytest.mark.anyio
@pytest.mark.promise("P-TOOL-2")
async def test_a_narrowed_enum_and_maximum_refuse_other_values_before_any_upstream_io(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ACCOUNT_ENV, "acct-42")
    async with signed_serving(billing_config(tmp_path)) as h:
        # GBP and 60000 are fine upstream; the operator served only EUR/USD, up to 50000.
        gbp = await call(h, "billing", "bill_customer", amount=100, currency="GBP")
        over = await call(h, "billing", "bill_customer", amount=60_000, currency="EUR")
        assert (code(gbp), code(over)) == ("bad_arguments", "bad_arguments")
        assert '"enum":["EUR","USD"]' in text(gbp)
        assert h.runtime.gateway.guard("billing").calls == 0


@pytest.mark.anyio
async def test_the_upstream_names_are_not_callable_through_the_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ACCOUNT_ENV, "acct-42")
    async with signed_serving(billing_config(tmp_path)) as h:
        by_old_name = await call(h, "billing", "create_invoice", amount=1, currency="EUR")
        assert code(by_old_name) == "unknown_tool"
        old_argument = await call(h, "billing", "bill_customer", amount_cents=1, currency="EUR")
        assert code(old_argument) == "bad_arguments"
        assert "called 'amount' here" in text(old_argument)
        assert h.runtime.gateway.guard("billing").calls == 0


@pytest.mark.anyio
async def test_an_unset_operator_variable_refuses_the_call_before_any_upstream_io(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ACCOUNT_ENV, raising=False)
    async with signed_serving(billing_config(tmp_path)) as h:
        refused = await call(h, "billing", "bill_customer", amount=1, currency="EUR")
        assert code(refused) == "config_env_var"
        assert ACCOUNT_ENV in text(refused)
        assert h.runtime.gateway.guard("billing").calls == 0


@pytest.mark.anyio
async def test_a_mapped_call_the_upstream_schema_refuses_is_the_operators_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator value that is not a number where the upstream wants an integer: caught."""
    shape = {"args": {"amount_cents": {"env": ACCOUNT_ENV}}}
    monkeypatch.setenv(ACCOUNT_ENV, "not a number")
    async with signed_serving(billing_config(tmp_path, shape)) as h:
        refused = await call(h, "billing", "create_invoice", account_id="a", currency="EUR")
        assert code(refused) == "transform_mismatch"
        assert "not a number" not in text(refused)  # the operator's value is never echoed
        assert h.runtime.gateway.guard("billing").calls == 0


@pytest.mark.anyio
async def test_stubs_rift_and_code_mode_see_the_served_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ACCOUNT_ENV, "acct-42")
    async with signed_serving(billing_config(tmp_path)) as h:
        cards = h.runtime.cards
        shapes = tool_shapes(cards["billing"])
        assert set(shapes) == {"bill_customer", "list_invoices"}
        source = "\n".join(generate_stubs(cards).files.values())
        assert "def bill_customer(" in source and "amount: int" in source
        assert "create_invoice" not in source and "account_id" not in source
        rift = {t.tool: t for t in tools_from_cards({"billing": cards["billing"]})}
        assert set(rift) == {"bill_customer", "list_invoices"}
        served = rift["bill_customer"]
        member = MemberText("billing", served.tool, frozenset(), (), upstream=served.upstream)
        # Rift's suggested override is keyed as the overrides file keys it: by upstream name.
        assert override_text(member, "Bill.").startswith("[servers.billing.tools.create_invoice]")


@pytest.mark.anyio
async def test_code_modes_write_gate_reads_a_renamed_tools_own_annotations(
    tmp_path: Path,
) -> None:
    """A renamed read-only tool still runs from code; a renamed write is still refused."""
    from cartograph.config.model import CodeModeConfig
    from tests.codemode.support import notes, run_tool

    reshape = {
        "read_note": ToolTransform.model_validate(
            {"name": "open_note", "args": {"name": {"name": "title"}}}
        ),
        "write_note": ToolTransform(name="save_note"),
    }
    base = config_for(tmp_path, notes().model_copy(update={"tools": reshape}))
    config = base.model_copy(update={"code_mode": CodeModeConfig(enabled=True, wall_time=20.0)})
    async with signed_serving(config) as h:
        result = await run_tool(h, 'await notes.open_note(title="alpha")')
        assert not result.is_error, text(result)
        assert isinstance(result.structured_content, dict)
        assert result.structured_content["value"] == "one two three"
        refused = await run_tool(h, 'await notes.save_note(name="n", text="t")')
        assert code(refused) == "code_write_denied"
        assert text(await call(h, "notes", "writes")) == "0"
        await h.close_upstreams()
