"""`call` semantics: isolation, validation before I/O, drift, secrets, progress, cancellation."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import anyio
import pytest
from mcp import Client

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.model import Catalog
from cartograph.gateway.audit import kept_records
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.proxy import build_proxy_server
from cartograph.server.runtime.catalog import CatalogRuntime
from tests.helpers.support import config_for, scriptable
from tests.server.support import call, code, running, text, until_drift, wait_until


@pytest.mark.anyio
@pytest.mark.promise("P-POOL-1")
async def test_two_downstream_clients_never_share_a_stateful_upstream_session(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("counter"), share=False) as h:
        counts = {
            client: [text(await call(h, "counter", "count", client=client)) for _ in range(3)]
            for client in ("alice", "bob")
        }
        assert counts == {"alice": ["1", "2", "3"], "bob": ["1", "2", "3"]}
        alice_pid = text(await call(h, "counter", "pid", client="alice"))
        assert alice_pid != text(await call(h, "counter", "pid", client="bob"))


@pytest.mark.anyio
async def test_a_stateless_upstream_is_shared_across_clients(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("shared", stateless=True), share=False) as h:
        assert text(await call(h, "shared", "count", client="alice")) == "1"
        assert text(await call(h, "shared", "count", client="bob")) == "2"


@pytest.mark.anyio
@pytest.mark.promise("P-TOOL-1")
async def test_invalid_arguments_are_refused_before_the_upstream_sees_anything(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("calc")) as h:
        refused = await call(h, "calc", "add", a="one", b=2)
        assert code(refused) == "bad_arguments"
        assert '"required":["a","b"]' in text(refused)
        assert h.runtime.gateway.guard("calc").calls == 0


@pytest.mark.anyio
async def test_unknown_server_and_unknown_tool_get_specific_errors(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("calc")) as h:
        assert code(await call(h, "nope", "add")) == "unknown_server"
        assert code(await call(h, "calc", "nope")) == "unknown_tool"
        assert text(await call(h, "calc", "add", a=1, b=1)) == "2"


@pytest.mark.anyio
@pytest.mark.promise("P-CARD-2")
async def test_list_changed_rug_pull_withholds_the_tool_and_names_the_reattest_command(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("shifty")) as h:
        found = h.runtime.discover("echo the text back", 5)
        assert ("shifty", "echo") in {(t.server, t.tool) for t in found.tools}
        assert text(await call(h, "shifty", "mutate")) == "mutated"
        await until_drift(h, lambda: not _exposed(h, "shifty", "echo"))
        refused = await call(h, "shifty", "echo", text="hi")
        assert code(refused) == "tool_drifted"
        assert "cartograph bootstrap --server shifty" in text(refused)
        status = h.runtime.status()["servers"][0]
        assert status["drifted"] == [{"tool": "echo", "changed": ["description"]}]
        await wait_until(lambda: ("shifty", "echo") in (h.runtime.index.excluded or set()))
        found = h.runtime.discover("echo the text back", 5)
        assert ("shifty", "echo") not in {(t.server, t.tool) for t in found.tools}


@pytest.mark.anyio
@pytest.mark.promise("P-LOG-1")
async def test_upstream_env_secrets_never_reach_errors_status_logs_or_the_audit_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-canary-7f3a9b2c1d"
    server = scriptable("leaky", env={"SECRET_TOKEN": secret})
    audit = tmp_path / "audit.jsonl"
    caplog.set_level(logging.DEBUG)
    async with running(tmp_path, server, audit_log=audit) as h:
        echoed = await call(h, "leaky", "secret")  # the upstream puts the value in its error
        assert echoed.is_error
        crashed = await call(h, "leaky", "crash")  # its stderr carries the value too
        assert code(crashed) == "upstream_closed"
        assert "stderr tail" in text(crashed)
        status = json.dumps(h.runtime.status())
        surfaces = [text(crashed), json.dumps(crashed.structured_content), status]
        surfaces += [text(echoed), json.dumps(echoed.structured_content)]
        for surface in surfaces:
            assert secret not in surface
    assert caplog.records  # the proxy did log; none of it carries the value
    assert secret not in caplog.text
    assert all(secret not in str(r.args) for r in caplog.records)
    assert secret not in audit.read_text()


@pytest.mark.anyio
@pytest.mark.promise("P-LOG-2")
async def test_every_call_writes_one_audit_record_with_argument_shape_only(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("calc")) as h:
        await call(h, "calc", "echo", text="private words")
        await call(h, "calc", "add", a="x", b=1)
        records = kept_records(h.audit)
    assert [(r.server, r.tool, r.outcome) for r in records] == [
        ("calc", "echo", "ok"),
        ("calc", "add", "bad_arguments"),
    ]
    assert records[0].arguments == {"text": "string"}
    assert records[0].catalog == "default"
    assert "private words" not in json.dumps([r.__dict__ for r in records], default=str)


@pytest.mark.anyio
async def test_progress_from_the_upstream_reaches_the_downstream_client(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("steps")) as h:
        server = build_proxy_server(h)
        seen: list[tuple[float, float | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total))

        async with Client(server, mode="legacy") as client:
            result = await client.call_tool(
                "call",
                {"server": "steps", "tool": "progress", "arguments": {"steps": 3}},
                progress_callback=on_progress,
            )
        assert text(result) == "done"
        assert seen == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]


@pytest.mark.anyio
async def test_downstream_cancellation_cancels_the_upstream_call(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("stuck", call_timeout=30.0)) as h:
        server = build_proxy_server(h)
        async with Client(server, mode="legacy") as client:
            with anyio.move_on_after(1.0):
                await client.call_tool("call", {"server": "stuck", "tool": "hang", "arguments": {}})
            await wait_until(lambda: h.runtime.gateway.in_flight() == 0)
            again = await client.call_tool(
                "call", {"server": "stuck", "tool": "add", "arguments": {"a": 1, "b": 1}}
            )
        assert text(again) == "2"


@pytest.mark.anyio
async def test_a_cancelled_call_keeps_the_pooled_session_and_is_no_upstream_failure(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("stuck", call_timeout=30.0)) as h:
        session = h.runtime.gateway.shared_session("stuck")
        assert session is not None
        with anyio.move_on_after(0.5) as scope:
            await call(h, "stuck", "hang")
        assert scope.cancelled_caught  # cancellation reached us as itself
        assert session.alive
        assert text(await call(h, "stuck", "add", a=1, b=1)) == "2"
        assert h.runtime.gateway.shared_session("stuck") is session
        snapshot = h.runtime.gateway.snapshot()["servers"]["stuck"]
        assert (snapshot["failures"], snapshot["pool"]["restarts"]) == (0, 0)
        outcomes = [r.outcome for r in kept_records(h.audit)]
        assert outcomes == ["cancelled", "ok"]


@pytest.mark.anyio
async def test_the_proxy_lists_exactly_three_tools(tmp_path: Path) -> None:
    async with (
        running(tmp_path, scriptable("calc")) as h,
        Client(build_proxy_server(h), mode="legacy") as client,
    ):
        listed = await client.list_tools()
    assert [t.name for t in listed.tools] == ["discover", "status", "call"]


def _exposed(h: ProxyHandlers, server: str, tool: str) -> bool:
    entry = h.runtime.drift.get(server, tool)
    return entry is not None and entry.exposed


@pytest.mark.anyio
@pytest.mark.promise("P-CARD-4")
async def test_unattested_and_missing_tools_are_refused_with_the_cards_drift_codes(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("calc")) as h:
        live = h.runtime.live["calc"]
    ghost = live.tools[0].model_copy(update={"name": "ghost"})
    carded = (ghost, *(t for t in live.tools if t.name != "echo"))
    cards = attest_with_unsafe_throwaway_key(
        Catalog(servers=(live.model_copy(update={"tools": carded}),))
    )
    config = config_for(tmp_path, scriptable("calc"))
    runtime = await CatalogRuntime.start(config, config.servers, cards=cards)
    try:
        h = ProxyHandlers(runtime, catalog="default")
        unattested = await call(h, "calc", "echo", text="hi")
        missing = await call(h, "calc", "ghost", text="hi")
        assert (code(unattested), code(missing)) == ("tool_unattested", "tool_missing")
        assert "cartograph bootstrap --server calc" in text(unattested)
        assert text(await call(h, "calc", "add", a=1, b=2)) == "3"
        status = runtime.status()["servers"][0]
        assert (status["unattested"], status["missing"]) == (["echo"], ["ghost"])
    finally:
        await runtime.aclose()
