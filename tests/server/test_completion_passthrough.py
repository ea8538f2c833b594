"""``completion/complete`` passed through to an upstream: stdio, per-catalog HTTP, routed.

The upstream is our own Python-SDK server (``tests/helpers/content.py``), which
completes ``greet``'s ``name`` and ``mem://echo/{text}``'s ``text``. The client names
the prompt and template as Cartograph lists them (``<server>/<prompt>``,
``cartograph://<catalog>/<server>/<uri>``); the same allow/deny policy as
``prompts/get``/``resources/read`` applies, and each request gets one audit record.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from tests.helpers.serving import serve_http
from tests.http.support import mcp_client
from tests.server.content_support import content_config, content_server
from tests.server.stdio_serving import SERVE
from tests.server.support import running

pytestmark = pytest.mark.anyio

CATALOGS = """
[[catalogs]]
name = "main"
policy.deny = ["content/mem://echo/*"]

[[catalogs]]
name = "open"
"""


def completions(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    return [r for r in records if r["proxy_tool"] == "completion/complete"]


async def values(client: Client, ref: Any, name: str, value: str, **context: str) -> list[str]:
    """Completion values; the upstream connects behind the served index, so retry until then."""
    with anyio.fail_after(60):
        while True:
            try:
                done = await client.complete(ref, {"name": name, "value": value}, context or None)
            except MCPError as exc:
                if exc.error.data and exc.error.data.get("code") in {"unknown_server", "starting"}:
                    await anyio.sleep(0.05)
                    continue
                raise
            return done.completion.values


async def refused(client: Client, ref: Any, name: str, value: str, **context: str) -> str:
    with pytest.raises(MCPError) as caught:
        await client.complete(ref, {"name": name, "value": value}, context or None)
    code: str = caught.value.error.data["code"]
    return code


async def test_the_catalog_surface_completes_through_the_upstream_with_its_own_names(
    tmp_path: Path,
) -> None:
    from mcp.types import CompletionArgument

    async with running(tmp_path, content_server()) as handlers:
        prompt = PromptReference(name="content/greet")
        done = await handlers.complete(
            prompt, CompletionArgument(name="name", value="A"), None, principal=None
        )
        assert done.completion.values == ["Ada", "Alan"]
        template = ResourceTemplateReference(uri="cartograph://default/content/mem://echo/{text}")
        done = await handlers.complete(
            template, CompletionArgument(name="text", value="hel"), None, principal=None
        )
        assert done.completion.values == ["hello", "help"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_completes_prompt_and_template_arguments_under_policy_and_audit(
    tmp_path: Path, mode: str
) -> None:
    config = content_config(tmp_path, catalogs=CATALOGS.split('\n[[catalogs]]\nname = "open')[0])
    params = StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(config)],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )
    with anyio.fail_after(120):
        async with Client(params, mode=mode) as client:
            assert client.server_capabilities is None or (
                client.server_capabilities.completions is not None
            )
            greet = PromptReference(name="content/greet")
            assert await values(client, greet, "name", "Gr") == ["Grace"]
            denied = ResourceTemplateReference(uri="cartograph://main/content/mem://echo/{text}")
            assert await refused(client, denied, "text", "h") == "resource_denied"
            unknown = PromptReference(name="greet")  # no server part
            assert await refused(client, unknown, "name", "A") == "unknown_prompt"
            elsewhere = ResourceTemplateReference(uri="cartograph://other/content/mem://x/{y}")
            assert await refused(client, elsewhere, "y", "") == "unknown_resource"
    records = completions(tmp_path)
    by_outcome = {r["outcome"]: r for r in records}
    assert by_outcome["ok"]["server"] == "content" and by_outcome["ok"]["tool"] == "greet"
    assert by_outcome["resource_denied"]["tool"] == "mem://echo/{text}"
    assert {"unknown_prompt", "unknown_resource"} <= by_outcome.keys()
    assert all(r["catalog"] == "main" for r in records)
    assert by_outcome["ok"]["arguments"] == {"name": "string"}
    assert '"Gr' not in (tmp_path / "audit.jsonl").read_text()  # shapes, never values


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_completes_per_catalog_and_on_the_routed_mount(
    tmp_path: Path, mode: str
) -> None:
    config = content_config(tmp_path, catalogs=CATALOGS)
    with serve_http(config, "--mount-mode", "routed") as served, anyio.fail_after(150):
        async with mcp_client(f"{served.mcp}/main", mode=mode) as main:
            assert await values(main, PromptReference(name="main_content/greet"), "name", "A") == [
                "Ada",
                "Alan",
            ]
            denied = ResourceTemplateReference(uri="cartograph://main/content/mem://echo/{text}")
            assert await refused(main, denied, "text", "h") == "resource_denied"
        async with mcp_client(f"{served.mcp}/routed", mode=mode) as routed:
            opened = ResourceTemplateReference(uri="cartograph://open/content/mem://echo/{text}")
            assert await values(routed, opened, "text", "w") == ["world"]
            greet = PromptReference(name="content/greet")
            assert await values(routed, greet, "name", "Al", catalog="open") == ["Alan"]
            assert await refused(routed, greet, "name", "A") == "catalog_required"
            assert await values(routed, greet, "catalog", "o") == ["open"]
    records = completions(tmp_path)
    assert {(r["catalog"], r["outcome"]) for r in records} >= {
        ("main", "ok"),
        ("main", "resource_denied"),
        ("open", "ok"),
        ("routed", "catalog_required"),
    }
