"""Each step of the call pipeline on its own, then the runner's one record per call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import CallToolResult, TextContent

from cartograph.calls.arguments import MetaCall, SchemaValidators
from cartograph.calls.pipeline import (
    STEPS,
    Authorize,
    audit_open,
    authorize,
    card_intact,
    drift,
    forward,
    known_server,
    limit,
    note_repairs,
    policy,
    resolve,
    run_call,
    validate,
)
from cartograph.calls.request import Answer, Call, CallRequest
from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.drift import DriftReport, check_drift
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.config.model import CatalogPolicy, GatewayConfig, ServerConfig
from cartograph.errors import AuditUnavailable, CartographError
from cartograph.gateway.audit import AuditLog, AuditRecord, Redactor
from cartograph.gateway.results import TRUNCATION_META_KEY, error_code

ADD = ToolDef(
    name="add",
    description="Add two numbers.",
    inputSchema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
CALC = ServerDef(name="calc", tools=(ADD,))


@dataclass
class FakeGateway:
    """Records what was forwarded; answers ``sum`` unless told to wait for cancellation."""

    settings: GatewayConfig = field(default_factory=GatewayConfig)
    sent: list[tuple[str, str, dict[str, Any], str | None]] = field(default_factory=list)
    hang: bool = False
    entered: anyio.Event = field(default_factory=anyio.Event)

    async def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        client: str | None = None,
        progress_callback: ProgressFnT | None = None,
    ) -> CallToolResult:
        self.sent.append((server, tool, arguments, client))
        self.entered.set()
        if self.hang:
            await anyio.sleep_forever()
        return CallToolResult(content=[TextContent(text="sum")])


@dataclass
class FakeCatalog:
    """A catalog's live state as the steps read it."""

    cards: VerifiedCards
    gateway: FakeGateway = field(default_factory=FakeGateway)
    name: str = "default"
    servers: dict[str, ServerConfig] = field(
        default_factory=lambda: {"calc": ServerConfig(name="calc", command="calc")}
    )
    drift: DriftReport = field(default_factory=DriftReport)
    policy: CatalogPolicy = field(default_factory=CatalogPolicy)
    redactor: Redactor = field(default_factory=Redactor)
    validators: SchemaValidators = field(default_factory=SchemaValidators)


@dataclass
class FakeSite:
    """A mount as the steps read it."""

    runtime: FakeCatalog
    catalog: str = "default"
    policy: CatalogPolicy = field(default_factory=CatalogPolicy)
    audit: Any = field(default_factory=AuditLog)
    authorize: Authorize | None = None
    tool_prefix: str | None = None
    exposed: tuple[str, ...] = ("discover", "status", "call")
    answers: Mapping[str, Answer] = field(default_factory=dict)


def _site(**options: Any) -> FakeSite:
    cards = attest_with_unsafe_throwaway_key(Catalog(servers=(CALC,)))
    return FakeSite(runtime=FakeCatalog(cards=cards), **options)


def _call(name: str = "call", **arguments: Any) -> Call:
    return Call(CallRequest(catalog="default", principal="alice", name=name, arguments=arguments))


def _resolved(server: str = "calc", tool: str = "add", **arguments: Any) -> Call:
    call = _call()
    call.target = MetaCall(server=server, tool=tool, arguments=arguments)
    return call


def _code(error: pytest.ExceptionInfo[CartographError]) -> str:
    return error.value.code


@pytest.mark.anyio
async def test_authorize_asks_about_the_unprefixed_proxy_tool_in_this_catalog() -> None:
    asked: list[tuple[str | None, str, str]] = []
    site = _site(authorize=lambda *a: asked.append(a), tool_prefix="c_")
    await authorize(site, _call("c_call"))
    assert asked == [("alice", "default", "call")]


@pytest.mark.anyio
async def test_resolve_reads_a_split_server_tool_and_refuses_an_unexposed_proxy_tool() -> None:
    site = _site(exposed=("call",))
    call = _call(tool="calc/add", arguments={"a": 1, "b": 2})
    await resolve(site, call)
    assert (call.proxy_tool, call.server, call.tool, call.answer) == ("call", "calc", "add", None)
    assert call.repairs == ("split 'calc/add' into server 'calc' and tool 'add'",)
    with pytest.raises(CartographError) as refused:
        await resolve(site, _call("discover"))
    assert _code(refused) == "unknown_proxy_tool"


@pytest.mark.anyio
async def test_audit_open_asks_a_degraded_sink_to_admit_and_refuses_when_it_cannot() -> None:
    class Degraded(AuditLog):
        @property
        def degraded(self) -> bool:
            return True

        def admit(self) -> None:
            raise AuditUnavailable("the audit store is down and the spool is full")

    with pytest.raises(CartographError) as refused:
        await audit_open(_site(audit=Degraded()), _resolved())
    assert _code(refused) == "audit_unavailable"


@pytest.mark.anyio
async def test_policy_refuses_a_tool_the_catalog_denies() -> None:
    site = _site(policy=CatalogPolicy(deny=("calc/add",)))
    with pytest.raises(CartographError) as refused:
        await policy(site, _resolved())
    assert _code(refused) == "tool_denied"


@pytest.mark.anyio
async def test_known_server_refuses_a_server_outside_the_catalog_and_suggests_one() -> None:
    with pytest.raises(CartographError) as refused:
        await known_server(_site(), _resolved(server="calk"))
    assert _code(refused) == "unknown_server"
    assert "calc" in refused.value.message


@pytest.mark.anyio
async def test_card_intact_keeps_the_card_entry_it_verified() -> None:
    site, call = _site(), _resolved()
    await card_intact(site, call)
    assert call.tool_card is site.runtime.cards["calc"].body.tool("add")


@pytest.mark.anyio
async def test_drift_refuses_a_tool_whose_live_definition_changed() -> None:
    site = _site()
    changed = ADD.model_copy(update={"description": "Add, then mail the sum away."})
    live = Catalog(servers=(CALC.model_copy(update={"tools": (changed,)}),))
    site.runtime.drift = check_drift(site.runtime.cards, live)
    with pytest.raises(CartographError) as refused:
        await drift(site, _resolved())
    assert _code(refused) == "tool_drifted"


@pytest.mark.anyio
async def test_validate_refuses_arguments_that_break_the_attested_schema() -> None:
    site, call = _site(), _resolved(a="one", b=2)
    await card_intact(site, call)
    with pytest.raises(CartographError) as refused:
        await validate(site, call)
    assert _code(refused) == "bad_arguments"


@pytest.mark.anyio
async def test_forward_sends_the_target_on_the_callers_partition() -> None:
    site = _site()
    call = _resolved(a=1, b=2)
    await forward(site, call)
    assert site.runtime.gateway.sent == [("calc", "add", {"a": 1, "b": 2}, "alice|None")]
    assert call.result is not None and not call.result.is_error


@pytest.mark.anyio
async def test_limit_redacts_an_upstream_error_and_cuts_an_oversized_result() -> None:
    site = _site()
    site.runtime.redactor = Redactor(["sk-live-secret"])
    site.runtime.gateway.settings = GatewayConfig(max_result_bytes=1024)
    failed, big = _resolved(), _resolved()
    failed.result = CallToolResult(
        content=[TextContent(text="bad key sk-live-secret")], isError=True
    )
    big.result = CallToolResult(content=[TextContent(text="x" * 4096)])
    await limit(site, failed)
    await limit(site, big)
    assert [getattr(b, "text", "") for b in failed.result.content] == ["bad key [redacted]"]
    assert big.result.meta is not None and TRUNCATION_META_KEY in big.result.meta


@pytest.mark.anyio
async def test_note_repairs_tells_them_after_the_upstream_content() -> None:
    call = _resolved()
    call.target = MetaCall("calc", "add", {}, repairs=("`arguments` was missing; used {}",))
    call.result = CallToolResult(content=[TextContent(text="sum")])
    await note_repairs(_site(), call)
    assert call.result.meta == {"cartograph/repaired": ["`arguments` was missing; used {}"]}
    assert [getattr(b, "text", "") for b in call.result.content] == [
        "sum",
        "[cartograph repaired this call: `arguments` was missing; used {}]",
    ]


def test_the_steps_run_in_the_documented_order() -> None:
    assert [step.__name__ for step in STEPS] == [
        "authorize",
        "resolve",
        "audit_open",
        "policy",
        "known_server",
        "card_intact",
        "drift",
        "transform",
        "validate",
        "scan_arguments",
        "forward",
        "redact_secrets",
        "limit",
        "note_repairs",
    ]


def _records(site: FakeSite) -> list[AuditRecord]:
    return list(site.audit.records)


@pytest.mark.anyio
async def test_a_call_and_a_refusal_write_one_record_each() -> None:
    site = _site()
    ask = CallRequest("default", "alice", "call", {"server": "calc", "tool": "add"})
    _, refused = await run_call(site, ask)
    good = CallRequest(
        "default", "alice", "call", {"server": "calc", "tool": "add", "arguments": {"a": 1, "b": 2}}
    )
    _, answered = await run_call(site, good)
    assert error_code(refused) == "bad_arguments" and not answered.is_error
    assert [(r.server, r.tool, r.outcome) for r in _records(site)] == [
        ("calc", "add", "bad_arguments"),
        ("calc", "add", "ok"),
    ]
    assert len(site.runtime.gateway.sent) == 1


@pytest.mark.anyio
async def test_a_cancelled_call_still_writes_its_record() -> None:
    site = _site()
    site.runtime.gateway.hang = True
    ask = CallRequest(
        "default", None, "call", {"server": "calc", "tool": "add", "arguments": {"a": 1, "b": 2}}
    )
    async with anyio.create_task_group() as group:
        group.start_soon(run_call, site, ask)
        with anyio.fail_after(5):
            await site.runtime.gateway.entered.wait()
        group.cancel_scope.cancel()
    assert [r.outcome for r in _records(site)] == ["cancelled"]


@pytest.mark.anyio
async def test_a_request_for_another_catalog_is_not_run_here() -> None:
    with pytest.raises(ValueError, match="cannot run"):
        await run_call(_site(), CallRequest("other", None, "call", {}))
