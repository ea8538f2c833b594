"""Upstream resources and prompts through `cartograph serve`, stdio and HTTP, SDK client.

The upstream is the real ``@modelcontextprotocol/server-everything`` (demo/node_modules),
which offers static resources, two resource templates and four prompts, and adds a
session resource (announcing ``resources/list_changed``) when its gzip tool runs.
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
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import Resource, ResourceListChangedNotification

from cartograph.config.model import CatalogPolicy, ServerConfig
from cartograph.demo.loopback import EVERYTHING_SCRIPT
from cartograph.errors import PolicyError, ResultTooLarge
from cartograph.gateway.audit import kept_records
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.http import http_app
from cartograph.server.passthrough import (
    prompt_name,
    resource_uri,
    split_prompt_name,
    split_resource_uri,
)
from tests.helpers.serving import serve_http
from tests.helpers.support import config_for, scriptable, toml_for
from tests.http.support import mcp_client, serving
from tests.server.content_support import http_client
from tests.server.support import running, wait_until

DEMO = Path(__file__).resolve().parents[2] / "demo"
EVERYTHING = DEMO / EVERYTHING_SCRIPT
SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")

pytestmark = pytest.mark.anyio

ARCH = "cartograph://main/everything/demo://resource/static/document/architecture.md"
DENIED = "cartograph://main/everything/demo://resource/static/document/extension.md"
DYNAMIC = "cartograph://main/everything/demo://resource/dynamic/text/{resourceId}"
GZIP_DATA = "data:text/plain;base64,aGVsbG8gY2FydG9ncmFwaA=="  # offline: a data: URI
CATALOGS = """
[[catalogs]]
name = "main"
policy.deny = [
  "everything/demo://resource/static/document/extension.md",
  "everything/completable-*",
]

[[catalogs]]
name = "prompts-only"
servers = ["everything"]
policy = { passthrough = ["prompts"] }
"""


def write_config(tmp_path: Path, *, two_catalogs: bool) -> Path:
    everything = ServerConfig(name="everything", command="node", args=(str(EVERYTHING), "stdio"))
    servers = (everything, scriptable("calc"))
    audit = str(tmp_path / "audit.jsonl")
    text = toml_for(tmp_path / "state", *servers, audit_log=audit)
    catalogs = CATALOGS if two_catalogs else CATALOGS.split('\n[[catalogs]]\nname = "prompts')[0]
    path = tmp_path / "cartograph.toml"
    path.write_text(text + catalogs)
    return path


def serve_params(config: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[*SERVE, "--config", str(config)],
        cwd=Path.cwd(),
        env=dict(os.environ),
    )


class Changes:
    """``resources/list_changed`` as the client sees it, in either protocol era."""

    def __init__(self) -> None:
        self.seen = anyio.Event()

    async def handler(self, message: Any) -> None:
        if isinstance(message, ResourceListChangedNotification):
            self.seen.set()

    @asynccontextmanager
    async def listening(self, client: Client) -> AsyncIterator[None]:
        """On 2026-07-28 the client asks for changes with ``subscriptions/listen``."""
        if client.protocol_version != "2026-07-28":
            yield
            return
        async with (
            client.listen(resources_list_changed=True) as sub,
            anyio.create_task_group() as tg,
        ):

            async def pump() -> None:
                async for _event in sub:
                    self.seen.set()

            tg.start_soon(pump)
            yield
            tg.cancel_scope.cancel()


async def listed_resources(client: Client, limit: float = 60.0) -> list[Resource]:
    """Resources arrive once the upstream is connected behind the served index (bounded)."""
    with anyio.fail_after(limit):
        while True:
            found = (await client.list_resources(cache_mode="bypass")).resources
            if found:
                return found
            await anyio.sleep(0.05)


def text_of(result: Any) -> str:
    return "".join(getattr(m.content, "text", "") for m in result.messages)


async def check_passthrough(client: Client, prompt_prefix: str = "") -> None:
    uris = {r.uri for r in await listed_resources(client)}
    assert ARCH in uris
    assert DENIED not in uris  # policy deny glob over server/uri
    assert all(u.startswith("cartograph://main/everything/") for u in uris)
    templates = (await client.list_resource_templates(cache_mode="bypass")).resource_templates
    assert DYNAMIC in {t.uri_template for t in templates}

    read = await client.read_resource(ARCH, cache_mode="bypass")
    assert read.contents[0].uri == ARCH
    assert "Architecture" in getattr(read.contents[0], "text", "")
    expanded = DYNAMIC.replace("{resourceId}", "7")
    dynamic = await client.read_resource(expanded, cache_mode="bypass")
    assert dynamic.contents[0].uri == expanded

    prompts = {p.name for p in (await client.list_prompts(cache_mode="bypass")).prompts}
    assert f"{prompt_prefix}everything/args-prompt" in prompts
    assert f"{prompt_prefix}everything/completable-prompt" not in prompts  # denied
    got = await client.get_prompt(f"{prompt_prefix}everything/args-prompt", {"city": "Lisbon"})
    assert "Lisbon" in text_of(got)

    with pytest.raises(MCPError) as denied:
        await client.read_resource(DENIED, cache_mode="bypass")
    assert denied.value.error.data["code"] == "resource_denied"
    with pytest.raises(MCPError) as unknown:
        await client.get_prompt(f"{prompt_prefix}nosuch/prompt")
    assert unknown.value.error.data["code"] == "unknown_server"
    with pytest.raises(MCPError) as denied_prompt:
        await client.get_prompt(f"{prompt_prefix}everything/completable-prompt")
    assert denied_prompt.value.error.data["code"] == "prompt_denied"
    with pytest.raises(MCPError) as unnamed:
        await client.get_prompt(f"{prompt_prefix}args-prompt")  # no server part
    assert unnamed.value.error.data["code"] == "unknown_prompt"
    with pytest.raises(MCPError) as refused:
        await client.get_prompt(f"{prompt_prefix}everything/no-such-prompt")
    assert refused.value.error.data["code"] == "upstream_refused"


async def check_list_changed_is_forwarded(
    client: Client, changes: Changes, call: str = "call"
) -> None:
    async with changes.listening(client):
        result = await client.call_tool(
            call,
            {
                "server": "everything",
                "tool": "gzip-file-as-resource",
                "arguments": {"name": "hello.gz", "data": GZIP_DATA},
            },
        )
        assert not result.is_error, result
        with anyio.fail_after(30):
            await changes.seen.wait()
    uris = {r.uri for r in (await client.list_resources(cache_mode="bypass")).resources}
    assert "cartograph://main/everything/demo://resource/session/hello.gz" in uris


def audited(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize(
    ("server", "uri"),
    [
        ("everything", "demo://resource/dynamic/text/{resourceId}"),
        ("my server", "file:///tmp/a b?x=1#f"),
    ],
)
def test_resource_uris_map_back_to_catalog_server_and_upstream_uri(server: str, uri: str) -> None:
    namespaced = resource_uri("ops", server, uri)
    assert namespaced.startswith("cartograph://ops/")
    assert split_resource_uri(namespaced) == ("ops", server, uri)
    assert split_resource_uri(uri) is None


def test_prompt_names_carry_the_server_and_the_endpoint_prefix() -> None:
    assert prompt_name("everything", "args-prompt", "ops_") == "ops_everything/args-prompt"
    assert split_prompt_name("ops_everything/args-prompt", "ops_") == ("everything", "args-prompt")
    assert split_prompt_name("everything/args-prompt", "ops_") is None
    assert split_prompt_name("args-prompt") is None


async def test_a_catalog_with_prompts_off_refuses_prompts_get(tmp_path: Path) -> None:
    async with running(tmp_path, scriptable("calc")) as served:
        policy = CatalogPolicy(passthrough=("resources",))
        handlers = ProxyHandlers(served.runtime, catalog="default", policy=policy)
        with pytest.raises(PolicyError) as off:
            await handlers.get_prompt("calc/anything", None, principal=None)
        assert off.value.code == "prompts_off"
        assert handlers.list_prompts() == []
        record = kept_records(handlers.audit)[-1]
        assert (record.proxy_tool, record.outcome) == ("prompts/get", "prompts_off")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.integration
@pytest.mark.promise("P-LOG-2")
@pytest.mark.skipif(not EVERYTHING.is_file(), reason="server-everything: run scripts/setup")
async def test_stdio_serves_upstream_resources_and_prompts_namespaced_and_governed(
    tmp_path: Path, mode: str
) -> None:
    config = write_config(tmp_path, two_catalogs=False)
    changes = Changes()
    with anyio.fail_after(120):
        async with Client(
            serve_params(config), mode=mode, message_handler=changes.handler
        ) as client:
            # auto: 2026-07-28, so changes come on a subscriptions/listen stream
            assert (client.protocol_version == "2026-07-28") == (mode == "auto")
            await check_passthrough(client)
            await check_list_changed_is_forwarded(client, changes)
    records = audited(tmp_path)
    reads = [r for r in records if r["proxy_tool"] == "resources/read"]
    assert {r["outcome"] for r in reads} >= {"ok", "resource_denied"}
    assert any(r["tool"] == "demo://resource/static/document/architecture.md" for r in reads)
    gets = [r for r in records if r["proxy_tool"] == "prompts/get"]
    assert any(r["arguments"] == {"city": "string"} and r["outcome"] == "ok" for r in gets)
    assert "Lisbon" not in (tmp_path / "audit.jsonl").read_text()  # shapes, never values


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.integration
@pytest.mark.skipif(not EVERYTHING.is_file(), reason="server-everything: run scripts/setup")
async def test_http_serves_them_per_catalog_with_the_catalog_prefix_and_policy(
    tmp_path: Path, mode: str
) -> None:
    config = write_config(tmp_path, two_catalogs=True)
    changes = Changes()
    with serve_http(config, "--mount-mode", "routed") as served, anyio.fail_after(150):
        async with http_client(f"{served.mcp}/main", mode, changes.handler) as client:
            await check_passthrough(client, prompt_prefix="main_")
            await check_list_changed_is_forwarded(client, changes, call="main_call")
        async with http_client(f"{served.mcp}/prompts-only", mode, None) as other:
            assert (await other.list_resources(cache_mode="bypass")).resources == []
            with pytest.raises(MCPError) as off:
                await other.read_resource(
                    "cartograph://prompts-only/everything/demo://resource/static/document/features.md",
                    cache_mode="bypass",
                )
            assert off.value.error.data["code"] == "resources_off"
            prompts = {p.name for p in (await other.list_prompts(cache_mode="bypass")).prompts}
            assert "prompts_only_everything/completable-prompt" in prompts  # no deny here
            with pytest.raises(MCPError) as elsewhere:
                await other.read_resource(ARCH, cache_mode="bypass")  # another catalog's URI
            assert elsewhere.value.error.data["code"] == "unknown_resource"
        async with http_client(f"{served.mcp}/routed", mode, None) as routed:
            await check_routed(routed)
    refusals = [r for r in audited(tmp_path) if r["proxy_tool"] == "resources/read"]
    assert any(r["catalog"] == "routed" and r["outcome"] == "unknown_resource" for r in refusals)


async def check_routed(client: Client) -> None:
    """One copy of everything: URIs route by their catalog, prompts take ``catalog``."""
    uris = {r.uri for r in (await client.list_resources(cache_mode="bypass")).resources}
    assert ARCH in uris and DENIED not in uris
    assert not any(u.startswith("cartograph://prompts-only/") for u in uris)  # resources off
    read = await client.read_resource(ARCH, cache_mode="bypass")
    assert read.contents[0].uri == ARCH
    with pytest.raises(MCPError) as unknown:
        await client.read_resource("cartograph://nosuch/everything/demo://x", cache_mode="bypass")
    assert unknown.value.error.data["code"] == "unknown_resource"
    prompts = {p.name: p for p in (await client.list_prompts(cache_mode="bypass")).prompts}
    catalog = [a for a in prompts["everything/args-prompt"].arguments or [] if a.name == "catalog"]
    assert catalog and catalog[0].required
    got = await client.get_prompt("everything/args-prompt", {"city": "Porto", "catalog": "main"})
    assert "Porto" in text_of(got)
    with pytest.raises(MCPError) as missing:
        await client.get_prompt("everything/args-prompt", {"city": "Porto"})
    assert missing.value.error.data["code"] == "catalog_required"
    with pytest.raises(MCPError) as denied:  # denied in main, served by prompts-only
        await client.get_prompt("everything/completable-prompt", {"catalog": "main"})
    assert denied.value.error.data["code"] == "prompt_denied"
    other = await client.get_prompt(
        "everything/completable-prompt",
        {"catalog": "prompts-only", "department": "Engineering", "name": "Ada"},
    )
    assert other.messages


CONTENT = Path(__file__).resolve().parents[1] / "helpers" / "content.py"


@pytest.mark.parametrize("protocol", ["legacy", "auto", "2026-07-28"])
async def test_a_python_sdk_upstream_announces_new_resources_in_either_era(
    tmp_path: Path, protocol: str
) -> None:
    content = ServerConfig(
        name="content",
        command=sys.executable,
        args=(str(CONTENT),),
        protocol=protocol,
        connect_timeout=30.0,
    )
    async with running(tmp_path, content, max_result_bytes=2048) as handlers:
        changed = anyio.Event()

        async def on_change(kind: str) -> None:
            if kind == "resources":
                changed.set()

        handlers.subscribe_changes(on_change)
        uris = {r.uri for r in handlers.list_resources()}
        assert "cartograph://default/content/mem://small" in uris
        templates = {t.uri_template for t in handlers.list_resource_templates()}
        assert templates == {
            "cartograph://default/content/mem://echo/{text}",
            "cartograph://default/content/mem://files/{+path}",
        }
        echoed = await handlers.read_resource(
            "cartograph://default/content/mem://echo/hi", principal=None
        )
        assert getattr(echoed.contents[0], "text", "") == "echo: hi"
        prompt = await handlers.get_prompt("content/greet", {"name": "Ada"}, principal=None)
        assert "Hello, Ada!" in text_of(prompt)

        with pytest.raises(ResultTooLarge) as big:  # 4 KiB over a 2 KiB limit: refused, not cut
            await handlers.read_resource("cartograph://default/content/mem://big", principal=None)
        assert big.value.code == "result_too_large"

        added = await handlers.call_tool(
            "call",
            {"server": "content", "tool": "add_resource", "arguments": {"name": "x"}},
            principal=None,
        )
        assert not added.is_error, added
        with anyio.fail_after(20):
            await changed.wait()
        assert "cartograph://default/content/mem://added/x" in {
            r.uri for r in handlers.list_resources()
        }


async def test_an_ended_http_session_is_no_longer_told_of_list_changes(tmp_path: Path) -> None:
    """The notifier forgets a client when its MCP session ends (DELETE), not never."""
    config = config_for(tmp_path / "state", scriptable("calc"))
    async with http_app(config, unsafe_throwaway_key=True) as served:
        endpoint: Any = next(
            getattr(r, "endpoint", None)
            for r in served.app.routes
            if getattr(r, "path", "") == "/mcp"
        )
        mount = endpoint.mounts.per_catalog["default"]
        notifier = mount.manager.app.notifier
        with serving(served.app) as base, anyio.fail_after(60):
            async with mcp_client(f"{base}/mcp", mode="legacy") as client:
                await client.list_resources(cache_mode="bypass")
                assert len(notifier.clients) == 1
            await wait_until(lambda: not notifier.clients)
