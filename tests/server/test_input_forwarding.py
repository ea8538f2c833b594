"""An upstream's sampling and elicitation requests reach the client whose call caused them.

Through `cartograph serve` with the SDK client, against ``tests/helpers/asking.py``, whose
``ask_model`` tool asks its client for a model sample and ``ask_user`` for the user's name.
The catalog turns forwarding on (``policy.passthrough``); the client's callbacks answer,
and record what they were asked. Each forwarded request gets one audit record (its shape,
never its text); a client that did not declare the capability, or a request no single
caller can be found for, is refused with a code the upstream sees, and audited too.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
)

from cartograph.config.model import ServerConfig
from cartograph.upstream.input_requests import CALLER, InFlight
from tests.helpers.serving import serve_http
from tests.helpers.support import toml_for

pytestmark = pytest.mark.anyio

ASKING = Path(__file__).resolve().parents[1] / "helpers" / "asking.py"
SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")
BOTH = '["resources", "prompts", "sampling", "elicitation"]'
PROMPT = "PROMPT-CANARY-7f3a"  # what the upstream asks the model: never in the audit log
SAMPLED = "SAMPLE-CANARY-19c2"  # what the client's model answers


def write_config(tmp_path: Path, passthrough: str = BOTH, *, stateless: bool = False) -> Path:
    asking = ServerConfig(
        name="asking",
        command=sys.executable,
        args=(str(ASKING),),
        protocol="legacy",
        connect_timeout=30.0,
    )
    audit = str(tmp_path / "audit.jsonl")
    catalog = f'\n[[catalogs]]\nname = "main"\npolicy.passthrough = {passthrough}\n'
    path = tmp_path / "cartograph.toml"
    server = toml_for(tmp_path / "state", asking, audit_log=audit)
    path.write_text(server + ("stateless = true\n" if stateless else "") + catalog)
    return path


class Asked:
    """The client's side: what it was asked, and its answers."""

    def __init__(self) -> None:
        self.samples: list[CreateMessageRequestParams] = []
        self.elicits: list[ElicitRequestParams] = []

    async def sampling(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.samples.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(text=SAMPLED), model="test-model"
        )

    async def elicitation(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.elicits.append(params)
        return ElicitResult(action="accept", content={"name": "Ada"})


def callbacks(asked: Asked | None) -> dict[str, Any]:
    if asked is None:
        return {}
    return {"sampling_callback": asked.sampling, "elicitation_callback": asked.elicitation}


@asynccontextmanager
async def served(config: Path, asked: Asked | None, mode: str = "legacy") -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(config)],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )
    with anyio.fail_after(120):
        async with Client(params, mode=mode, **callbacks(asked)) as client:
            yield client


@asynccontextmanager
async def http_client(url: str, asked: Asked) -> AsyncIterator[Client]:
    async with create_mcp_http_client() as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport, mode="legacy", read_timeout_seconds=30, **callbacks(asked)
        ) as client:
            yield client


async def ask(client: Client, tool: str, **arguments: str) -> str:
    """Call ``tool`` of ``asking`` through ``call`` (waiting for the upstream to connect)."""
    while True:
        result = await client.call_tool(
            "call", {"server": "asking", "tool": tool, "arguments": arguments}
        )
        text = "".join(b.text for b in result.content if isinstance(b, TextContent))
        if "unknown_tool" in text or "unknown_server" in text or "starting" in text:
            await anyio.sleep(0.1)
            continue
        assert not result.is_error, text
        return text


def audited(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def asks(records: list[dict[str, Any]]) -> list[tuple[str, str | None, str | None, str]]:
    return [
        (r["proxy_tool"], r["server"], r["tool"], r["outcome"])
        for r in records
        if r["proxy_tool"] in ("sampling/createMessage", "elicitation/create")
    ]


@pytest.mark.promise("P-INPUT-1")
async def test_sampling_and_elicitation_reach_the_calling_client_with_one_record_each(
    tmp_path: Path,
) -> None:
    asked = Asked()
    async with served(write_config(tmp_path), asked) as client:
        assert await ask(client, "ask_model", prompt=PROMPT) == SAMPLED
        assert await ask(client, "ask_user", question="Who are you?") == "accept: Ada"
    (sample,) = asked.samples
    assert isinstance(sample.messages[0].content, TextContent)
    assert sample.messages[0].content.text == PROMPT
    (elicit,) = asked.elicits
    assert elicit.message == "Who are you?"
    records = audited(tmp_path)
    assert asks(records) == [
        ("sampling/createMessage", "asking", "ask_model", "ok"),
        ("elicitation/create", "asking", "ask_user", "ok"),
    ]
    text = (tmp_path / "audit.jsonl").read_text("utf-8")
    assert PROMPT not in text and SAMPLED not in text and "Ada" not in text  # shapes only
    assert all(r["catalog"] == "main" for r in records)


@pytest.mark.promise("P-INPUT-1")
async def test_attack_a_client_that_declared_neither_is_refused_with_a_code(
    tmp_path: Path,
) -> None:
    async with served(write_config(tmp_path), None) as client:
        said = await ask(client, "ask_model", prompt=PROMPT)
        assert said.startswith("refused: sampling_not_supported:"), said
        said = await ask(client, "ask_user", question="Who are you?")
        assert said.startswith("refused: elicitation_not_supported:"), said
    assert asks(audited(tmp_path)) == [
        ("sampling/createMessage", "asking", "ask_model", "sampling_not_supported"),
        ("elicitation/create", "asking", "ask_user", "elicitation_not_supported"),
    ]


async def test_a_catalog_that_does_not_turn_forwarding_on_never_asks_the_client(
    tmp_path: Path,
) -> None:
    asked = Asked()
    config = write_config(tmp_path, passthrough='["resources", "prompts"]')
    async with served(config, asked) as client:
        said = await ask(client, "ask_model", prompt=PROMPT)
        assert said.startswith("refused: "), said  # the upstream's client declared no sampling
        said = await ask(client, "ask_user", question="Who are you?")
        assert said.startswith("refused: "), said
    assert asked.samples == [] and asked.elicits == []
    assert asks(audited(tmp_path)) == []


@pytest.mark.promise("P-INPUT-1")
@pytest.mark.parametrize("stateless", [False, True], ids=["own-sessions", "shared-session"])
async def test_attack_two_http_sessions_are_each_asked_only_their_own_question(
    tmp_path: Path, stateless: bool
) -> None:
    alice, bob = Asked(), Asked()
    with serve_http(write_config(tmp_path, stateless=stateless)) as proxy, anyio.fail_after(150):
        url = f"{proxy.mcp}/main"
        async with http_client(url, alice) as a, http_client(url, bob) as b:
            assert await ask(a, "ask_model", prompt=PROMPT) == SAMPLED
            assert await ask(b, "ask_user", question="Who are you?") == "accept: Ada"
            assert await ask(a, "ask_model", prompt="again") == SAMPLED
    assert [len(alice.samples), len(alice.elicits)] == [2, 0]
    assert [len(bob.samples), len(bob.elicits)] == [0, 1]
    assert [r[3] for r in asks(audited(tmp_path))] == ["ok", "ok", "ok"]


async def test_a_2026_client_is_refused_with_a_code_not_asked_on_a_channel_it_lacks(
    tmp_path: Path,
) -> None:
    asked = Asked()
    async with served(write_config(tmp_path), asked, mode="2026-07-28") as client:
        said = await ask(client, "ask_model", prompt=PROMPT)
    assert said.startswith("refused: sampling_not_supported:") and "2026-07-28" in said, said
    assert asked.samples == []


class _Caller:
    def __init__(self, client: str | None) -> None:
        self.client = client


@pytest.mark.promise("P-INPUT-1")
def test_attack_calls_of_two_clients_on_one_shared_session_are_never_guessed() -> None:
    in_flight = InFlight("shared")
    assert in_flight.asked() == "no call is in flight on this upstream session"
    alice, bob = _Caller("http:a"), _Caller("http:b")
    token = CALLER.set(alice)
    try:
        with in_flight.calling("slow"):
            found = in_flight.asked()
            assert not isinstance(found, str) and found.caller is alice and found.tool == "slow"
            CALLER.set(bob)
            with in_flight.calling("fast"):
                assert isinstance(in_flight.asked(), str)  # two clients: refused, not guessed
            found = in_flight.asked()
            assert not isinstance(found, str) and found.caller is alice
    finally:
        CALLER.reset(token)
    assert isinstance(in_flight.asked(), str)


@pytest.mark.promise("P-INPUT-1")
def test_attack_a_request_with_no_caller_in_flight_blocks_attribution() -> None:
    in_flight = InFlight("shared")
    token = CALLER.set(_Caller("http:a"))
    try:
        with in_flight.calling("slow"):
            CALLER.set(None)  # `cartograph call`, or a read of the proxy's own
            with in_flight.calling("resources/read"):
                assert isinstance(in_flight.asked(), str)
            CALLER.set(_Caller(None))  # a sessionless request: no client of its own
            with in_flight.calling("other"):
                assert isinstance(in_flight.asked(), str)
    finally:
        CALLER.reset(token)
