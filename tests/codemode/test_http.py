"""``run`` through the real HTTP app and the SDK's streamable-HTTP client, with bearer tokens.

Two catalogs over two scriptable ``notes`` upstreams: ``team`` holds ``notes``,
``admin`` holds ``notes`` and ``vault``. Alice's token reaches ``team`` only.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from cartograph import error_codes as codes
from cartograph.config.model import (
    CatalogConfig,
    CodeModeConfig,
    Config,
    GatewayConfig,
    HttpConfig,
    IndexConfig,
    TokenConfig,
)
from cartograph.server.http import http_app
from tests.codemode.support import notes
from tests.http.support import mcp_client, serving

ALICE = "alice-token-0123456789abcdef0123"
ENV = {"ALICE_TOKEN": ALICE}
HOSTILE = (
    ("infinite_loop", "while True:\n    pass", codes.CODE_TIMEOUT),
    ("memory_bomb", "x = 'a' * (10**9)", codes.CODE_MEMORY_LIMIT),
    ("deep_recursion", "def f(n):\n    return f(n + 1)\nf(0)", codes.CODE_RECURSION_LIMIT),
    ("import_os", "import os\nos.listdir('/')", codes.CODE_FORBIDDEN),
    ("open_file", "open('/etc/passwd').read()", codes.CODE_FORBIDDEN),
    ("dunder_import", "__import__('socket')", codes.CODE_FORBIDDEN),
    ("introspection", "().__class__.__bases__[0].__subclasses__()", codes.CODE_FORBIDDEN),
)
WALL = 2.0


def config(state: Path, wall_time: float) -> Config:
    return Config(
        state_dir=state,
        servers=(notes("notes"), notes("vault")),
        index=IndexConfig(embedder="fake"),
        gateway=GatewayConfig(audit_log=state / "audit.jsonl"),
        catalogs=(
            CatalogConfig(name="team", servers=("notes",)),
            CatalogConfig(name="admin", servers=("notes", "vault")),
        ),
        http=HttpConfig(
            tokens=(TokenConfig(principal="alice", token_env="ALICE_TOKEN", catalogs=("team",)),)
        ),
        code_mode=CodeModeConfig(enabled=True, wall_time=wall_time, max_memory=32 * 1024 * 1024),
    )


@asynccontextmanager
async def team(state: Path, wall_time: float = 20.0) -> AsyncIterator[tuple[str, Any]]:
    """The real HTTP app, served; yields the ``team`` mount's URL and the app."""
    async with http_app(config(state, wall_time), unsafe_throwaway_key=True, environ=ENV) as app:
        with serving(app.app) as base:
            yield f"{base}/mcp/team", app


def audit_lines(state: Path) -> list[dict[str, Any]]:
    lines = (state / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def data(result: Any) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-1")
async def test_a_program_reaches_only_what_the_token_s_catalog_holds(tmp_path: Path) -> None:
    program = (
        "names = (await notes.list_notes())['notes']\n"
        "try:\n"
        "    await call('vault', 'read_note', {'name': 'alpha'})\n"
        "    leaked = True\n"
        "except LookupError as refused:\n"
        "    leaked = str(refused)\n"
        "{'names': names, 'vault': leaked}\n"
    )
    async with team(tmp_path) as (url, _), mcp_client(url, token=ALICE) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("team_run", {"code": program})
        uncaught = await client.call_tool(
            "team_run", {"code": "await vault.read_note(name='alpha')"}
        )
        run_id = data(result)["run"]
    records = audit_lines(tmp_path)
    assert "team_run" in tools
    value = data(result)["value"]
    assert value["names"] == ["alpha", "beta", "gamma"]
    assert value["vault"].startswith("[unknown_server] no server 'vault' in catalog 'team'")
    assert data(result)["calls"][1].startswith("vault/read_note unknown_server")
    assert data(uncaught)["error"]["code"] == codes.CODE_ERROR  # vault is no name in the sandbox
    of_run = [r for r in records if run_id in r.get("trace", "")]
    assert [(r["proxy_tool"], r.get("server"), r["outcome"]) for r in of_run] == [
        ("call", "notes", "ok"),
        ("call", "vault", codes.UNKNOWN_SERVER),
        ("run", None, "ok"),
    ]
    assert {(r["principal"], r["catalog"]) for r in of_run} == {("alice", "team")}


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-3")
async def test_hostile_programs_get_their_codes_while_another_client_is_served_as_before(
    tmp_path: Path,
) -> None:
    list_notes = {"server": "notes", "tool": "list_notes", "arguments": {}}

    async def latency(client: Client) -> float:
        started = time.perf_counter()
        result = await client.call_tool("team_call", list_notes)
        assert not result.is_error
        return time.perf_counter() - started

    async with (
        team(tmp_path, WALL) as (url, _),
        mcp_client(url, token=ALICE, read_timeout=60) as attacker,
        mcp_client(url, token=ALICE) as bystander,
    ):
        baseline = statistics.median([await latency(bystander) for _ in range(15)])
        during: list[float] = []
        outcomes: dict[str, tuple[str, float]] = {}
        done = anyio.Event()

        async def attack() -> None:
            for name, code, _ in HOSTILE:
                started = time.perf_counter()
                result = await attacker.call_tool("team_run", {"code": code})
                outcomes[name] = (data(result)["error"]["code"], time.perf_counter() - started)
            done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(attack)
            while not done.is_set():
                during.append(await latency(bystander))
        after = await attacker.call_tool("team_run", {"code": "sum(range(10))"})
    assert {n: c for n, (c, _) in outcomes.items()} == {n: c for n, _, c in HOSTILE}
    assert all(elapsed < WALL + 3.0 for _, elapsed in outcomes.values())
    assert statistics.median(during) <= max(3 * baseline, baseline + 0.05)
    assert data(after)["value"] == 45
