"""Rolling out a new card set: ``POST /admin/reload`` swaps it in without dropping a request.

Real cards (``keys init`` + ``bootstrap`` through the CLI, in-process), the
real serving path (``http_app``), real stdio upstreams, the SDK's client.
The second server has no card at first; once the operator bootstraps it, a
reload serves it while a call that was already in flight finishes normally.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from cartograph.config.loader import load_config
from cartograph.server.http import http_app
from tests.helpers.support import scriptable, toml_for
from tests.http.support import http_client, mcp_client, serving, tool_text

pytestmark = pytest.mark.anyio

ADMIN = "fleet-admin-token-0123456789abcdef0123"
AGENT = "fleet-agent-token-0123456789abcdef0123"
ENV = {"ADMIN_TOKEN": ADMIN, "AGENT_TOKEN": AGENT}
TOKENS = """
[[http.tokens]]
principal = "ops"
token_env = "ADMIN_TOKEN"
admin = true

[[http.tokens]]
principal = "agent"
token_env = "AGENT_TOKEN"
"""


async def cli(*args: str) -> None:
    """The real ``cartograph`` command, as the operator runs it (a subprocess)."""
    done = await anyio.run_process(
        [sys.executable, "-m", "cartograph.cli.main", *args], check=False
    )
    assert done.returncode == 0, done.stderr.decode()


def echo(server: str, text: str) -> dict[str, object]:
    return {"server": server, "tool": "echo", "arguments": {"text": text}}


async def wait_for(path: Path) -> None:
    """Bounded wait for the upstream to mark that the call is in flight."""
    with anyio.fail_after(30):
        while not await anyio.Path(path).exists():  # noqa: ASYNC110 - another process's file
            await anyio.sleep(0.02)


async def test_an_admin_reload_serves_new_cards_and_the_call_in_flight_finishes(
    tmp_path: Path,
) -> None:
    config_path = tmp_path / "cartograph.toml"
    # The call stays in flight through a bootstrap and a reload: slow on a loaded machine.
    servers = (scriptable("calc", call_timeout=120.0), scriptable("more"))
    config_path.write_text(toml_for(tmp_path / "state", *servers) + TOKENS, encoding="utf-8")
    await cli("keys", "init", "--state-dir", str(tmp_path / "state"))
    await cli("bootstrap", "--config", str(config_path), "--server", "calc")
    config = load_config(config_path)
    marker, release = tmp_path / "in-flight", tmp_path / "release"
    async with http_app(config, environ=ENV) as served:
        with serving(served.app) as base:
            async with mcp_client(f"{base}/mcp", token=AGENT, read_timeout=120) as client:
                before = await client.call_tool("call", echo("more", "hi"))
                assert before.is_error  # no card for `more` yet
                # Cards on disk are served only after a reload: sign `more`'s now, so that
                # the call held in flight spans the reload alone.
                await cli("bootstrap", "--config", str(config_path), "--server", "more")
                results: list[str] = []

                async def in_flight() -> None:
                    slow = {"path": str(marker), "seconds": 600.0, "until": str(release)}
                    answer = await client.call_tool(
                        "call", {"server": "calc", "tool": "announce", "arguments": slow}
                    )
                    results.append(
                        f"error: {tool_text(answer)}" if answer.is_error else tool_text(answer)
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(in_flight)
                    await wait_for(marker)
                    with (
                        http_client(base, AGENT) as agent,
                        http_client(base, ADMIN) as admin,
                        http_client(base) as nobody,
                    ):
                        refused = agent.post("/admin/reload")
                        anonymous = nobody.post("/admin/reload")
                        reloaded = await anyio.to_thread.run_sync(admin.post, "/admin/reload")
                    assert results == []  # the reload happened while the call was in flight
                    release.write_text("go")
                assert results == ["slept"]
                after = await client.call_tool("call", echo("more", "hi"))
    assert (
        refused.status_code == 403 and refused.json()["error"]["data"]["code"] == "admin_required"
    )
    assert anonymous.status_code == 401
    assert reloaded.status_code == 200, reloaded.text
    assert reloaded.json()["catalogs"]["default"]["cards"] == 2
    assert not after.is_error and tool_text(after) == "hi"


async def test_the_reload_endpoint_does_not_exist_without_an_admin_token(tmp_path: Path) -> None:
    config_path = tmp_path / "cartograph.toml"
    config_path.write_text(toml_for(tmp_path / "state", scriptable("calc")), encoding="utf-8")
    await cli("keys", "init", "--state-dir", str(tmp_path / "state"))
    await cli("bootstrap", "--config", str(config_path))
    async with http_app(load_config(config_path)) as served:
        with serving(served.app) as base, http_client(base) as http:
            assert http.post("/admin/reload").status_code == 404
