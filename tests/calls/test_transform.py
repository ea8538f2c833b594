"""The ``transform`` step: a served call mapped to the upstream's name and arguments.

The end-to-end proof (a live upstream receiving exactly its shape) is in
``tests/server/test_transforms.py``; these pin each rule of the mapping.
"""

from __future__ import annotations

from typing import Any

import pytest

from cartograph.calls.arguments import MetaCall, compile_validator
from cartograph.calls.request import Call, CallRequest
from cartograph.calls.transform import check_upstream, to_upstream, transform
from cartograph.cards.model import HiddenArgument, Pins, ToolCard, Transform
from cartograph.errors import CartographError

PINS = Pins(description="d", input_schema="i", output_schema="o", annotations="a", title="t")
UPSTREAM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "account_id": {"type": "string"},
        "amount_cents": {"type": "integer"},
        "limit": {"type": "integer"},
        "region": {"type": "string"},
        "memo": {"type": "string"},
        "note": {"type": "string"},
    },
    "required": ["account_id", "amount_cents"],
}
SHAPE = Transform(
    upstream="create_invoice",
    input_schema=UPSTREAM_SCHEMA,
    renamed={"amount": "amount_cents"},
    hidden={
        "account_id": HiddenArgument(source="env", env="ACCOUNT"),
        "limit": HiddenArgument(source="env", env="LIMIT"),
        "region": HiddenArgument(source="fixed", value="eu-west"),
        "memo": HiddenArgument(source="omitted"),
    },
)
SERVED = ToolCard(name="bill", description="Bill.", digest="x", pins=PINS, transform=SHAPE)
PLAIN = ToolCard(name="add", description="Add.", digest="x", pins=PINS)
ENV = {"ACCOUNT": "acct-42", "LIMIT": "25"}


def _refused(arguments: dict[str, Any], environ: dict[str, str] = ENV) -> str:
    with pytest.raises(CartographError) as caught:
        to_upstream("billing", SERVED, arguments, environ)
    return caught.value.code


def test_served_names_map_back_and_hidden_values_are_filled_in_typed() -> None:
    assert to_upstream("billing", SERVED, {"amount": 5, "note": "n"}, ENV) == {
        "amount_cents": 5,
        "note": "n",
        "account_id": "acct-42",  # a string argument takes the variable as it is
        "limit": 25,  # an integer one reads it as JSON
        "region": "eu-west",
    }


def test_a_hidden_argument_set_by_the_caller_is_refused_even_one_never_sent() -> None:
    assert _refused({"amount": 5, "account_id": "acct-evil"}) == "argument_hidden"
    assert _refused({"amount": 5, "memo": "sneaky"}) == "argument_hidden"


def test_the_upstream_name_of_a_renamed_argument_is_not_the_callers_to_use() -> None:
    assert _refused({"amount_cents": 5}) == "bad_arguments"


def test_an_unset_variable_is_refused_naming_it() -> None:
    with pytest.raises(CartographError) as caught:
        to_upstream("billing", SERVED, {"amount": 5}, {"LIMIT": "1"})
    assert (caught.value.code, caught.value.details.get("key")) == ("config_env_var", "ACCOUNT")


def test_a_mapped_call_the_upstream_refuses_is_a_transform_mismatch_that_echoes_no_value() -> None:
    validator = compile_validator(UPSTREAM_SCHEMA)
    mapped = to_upstream("billing", SERVED, {"amount": 5}, {"ACCOUNT": "a", "LIMIT": "lots"})
    with pytest.raises(CartographError) as caught:
        check_upstream("billing", SERVED, mapped, validator)
    assert caught.value.code == "transform_mismatch"
    assert "lots" not in caught.value.message and "at limit" in caught.value.message


@pytest.mark.anyio
async def test_the_step_sets_the_upstream_call_and_leaves_an_unshaped_tool_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    call = Call(CallRequest(catalog="default", principal=None, name="call", arguments={}))
    call.target = MetaCall("billing", "bill", {"amount": 7}, repairs=("r",))
    call.tool_card = SERVED
    await transform(None, call)
    assert call.upstream is not None and call.sent is call.upstream
    assert (call.upstream.tool, call.upstream.arguments["amount_cents"]) == ("create_invoice", 7)
    assert call.upstream.repairs == ("r",)
    assert (call.tool, call.arguments) == ("bill", {"amount": 7})  # the record keeps the served

    plain = Call(CallRequest(catalog="default", principal=None, name="call", arguments={}))
    plain.target = MetaCall("calc", "add", {"a": 1})
    plain.tool_card = PLAIN
    await transform(None, plain)
    assert plain.upstream is None and plain.sent is plain.target
