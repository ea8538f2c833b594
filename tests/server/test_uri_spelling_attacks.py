"""Another spelling of a denied resource, prompt or completion reference reads nothing (P-URI-1).

Through `cartograph serve` (stdio) with the SDK client, against our Python-SDK upstream
(``tests/helpers/content.py``), whose ``mem://files/{+path}`` is a naive file store: it
percent-decodes the path and resolves ``..`` in it. Before issue 24 the catalog's deny
glob matched the client's raw text, so ``mem://files/secret%2Fkey`` was served past
``deny = ["content/mem://files/secret/*"]`` and audited ``ok``. Now one canonical spelling
is matched, audited and forwarded, and a spelling no normalisation can settle is refused
(``resource_uri_ambiguous``, ``prompt_name_ambiguous``). Each test checks the refusal the
client sees, the audit record's outcome and name, and that the canary never comes back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from tests.helpers.serving import serve_http
from tests.http.support import mcp_client
from tests.server.content_support import (
    FILES,
    Updates,
    connected,
    files_config,
    served,
    subscribe,
    touch,
    unsubscribe,
)

pytestmark = pytest.mark.anyio

SERVE = ("-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key")
CANARY = "SECRET-CANARY-5d41402a"  # the text of mem://files/secret/key
SECRET = "mem://files/secret/key"  # the canonical spelling every variant is judged as


async def read_refused(client: Client, uri: str) -> str:
    """The code of a refused read; a read that answers fails the test (with what it read)."""
    try:
        read = await client.read_resource(uri, cache_mode="bypass")
    except MCPError as exc:
        assert CANARY not in exc.error.message
        code: str = exc.error.data["code"]
        return code
    pytest.fail(f"{uri!r} was read: {read.contents}")


def audited(tmp_path: Path, method: str) -> list[tuple[str | None, str | None, str]]:
    lines = (tmp_path / "audit.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    return [(r["server"], r["tool"], r["outcome"]) for r in records if r["proxy_tool"] == method]


@pytest.mark.promise("P-URI-1")
async def test_attack_encoded_slash_does_not_read_a_denied_resource(tmp_path: Path) -> None:
    variants = [
        "secret%2Fkey",  # the upstream decodes %2F into the path's "/"
        "secret%2fkey",
        "public%2F..%2Fsecret%2Fkey",
        "secret%252Fkey",  # an encoded "%": an upstream that decodes twice
        "secret%5Ckey",  # an encoded "\\": a Windows path separator
        "secret\\key",
    ]
    async with served(tmp_path) as client:
        assert await read_refused(client, FILES + "secret/key") == "resource_denied"
        for variant in variants:
            assert await read_refused(client, FILES + variant) == "resource_uri_ambiguous"
    reads = audited(tmp_path, "resources/read")
    assert ("content", SECRET, "resource_denied") in reads
    assert [r for r in reads if r[2] == "resource_uri_ambiguous"] == [
        ("content", f"mem://files/{variant}", "resource_uri_ambiguous") for variant in variants
    ]  # an ambiguous spelling is audited as it came
    assert CANARY not in (tmp_path / "audit.jsonl").read_text("utf-8")


async def test_attack_encoded_server_name_does_not_bypass_deny(tmp_path: Path) -> None:
    async with served(tmp_path) as client:
        encoded = "cartograph://main/%63ontent/mem://files/"  # %63 is "c"
        assert await read_refused(client, encoded + "secret/key") == "resource_denied"
        assert await read_refused(client, encoded + "secret%2Fkey") == "resource_uri_ambiguous"
        control = "cartograph://main/content%0A/mem://files/public/readme"
        assert await read_refused(client, control) == "resource_uri_ambiguous"
    reads = audited(tmp_path, "resources/read")
    assert ("content", SECRET, "resource_denied") in reads  # the server part, decoded
    assert ("content", "mem://files/secret%2Fkey", "resource_uri_ambiguous") in reads


async def test_attack_dot_segments_are_removed_before_policy_judges(tmp_path: Path) -> None:
    async with served(tmp_path) as client:
        for variant in ["public/../secret/key", "public/%2E%2E/secret/key", "./secret/./key"]:
            assert await read_refused(client, FILES + variant) == "resource_denied"
        read = await client.read_resource(f"{FILES}secret/../public/./readme", cache_mode="bypass")
        assert getattr(read.contents[0], "text", "") == "a public file"
        assert read.contents[0].uri == f"{FILES}public/readme"  # the upstream got the canonical
    reads = audited(tmp_path, "resources/read")
    assert reads.count(("content", SECRET, "resource_denied")) == 3
    assert ("content", "mem://files/public/readme", "ok") in reads


async def test_attack_case_of_scheme_and_host_and_encoded_letters_do_not_bypass_deny(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as client:
        for variant in [
            "cartograph://main/content/MEM://files/secret/key",
            "cartograph://main/content/mem://FILES/secret/key",
            f"{FILES}se%63ret/key",  # %63 is "c": an unreserved letter, decoded
            f"{FILES}%73ecret/%6b%65%79",
        ]:
            assert await read_refused(client, variant) == "resource_denied"
    reads = audited(tmp_path, "resources/read")
    assert reads.count(("content", SECRET, "resource_denied")) == 4


async def test_attack_control_and_format_characters_in_a_prompt_name_are_refused(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as client:
        with pytest.raises(MCPError) as denied:
            await client.get_prompt("content/greet", {"name": "Ada"})
        assert denied.value.error.data["code"] == "prompt_denied"
        for name in ["content/greet\u200b", "content/greet\x00", "content/gree\u0301t"]:
            with pytest.raises(MCPError) as refused:
                await client.get_prompt(name, {"name": "Ada"})
            assert refused.value.error.data["code"] == "prompt_name_ambiguous"
    gets = audited(tmp_path, "prompts/get")
    assert ("content", "greet", "prompt_denied") in gets
    assert [g[2] for g in gets if g[2] != "prompt_denied"] == ["prompt_name_ambiguous"] * 3


async def test_attack_completion_references_are_judged_in_their_canonical_spelling(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as client:
        cases: list[tuple[Any, str]] = [
            (ResourceTemplateReference(uri=f"{FILES}secret/{{x}}"), "resource_denied"),
            (
                ResourceTemplateReference(uri="cartograph://main/content/MEM://files/secret/{x}"),
                "resource_denied",
            ),
            (ResourceTemplateReference(uri=f"{FILES}secret%2F{{x}}"), "resource_uri_ambiguous"),
            (PromptReference(name="content/greet"), "prompt_denied"),
            (PromptReference(name="content/greet\u200b"), "prompt_name_ambiguous"),
        ]
        for ref, expected in cases:
            with pytest.raises(MCPError) as refused:
                await client.complete(ref, {"name": "x", "value": ""})
            assert refused.value.error.data["code"] == expected
    records = audited(tmp_path, "completion/complete")
    assert [r[2] for r in records] == [expected for _, expected in cases]
    assert records[1] == ("content", "mem://files/secret/{x}", "resource_denied")


async def test_attack_subscribe_is_judged_and_forwarded_in_the_canonical_spelling(
    tmp_path: Path,
) -> None:
    updates = Updates()
    async with served(tmp_path, updates) as client:
        with pytest.raises(MCPError) as refused:
            await subscribe(client, f"{FILES}secret%2Fkey")
        assert refused.value.error.data["code"] == "resource_uri_ambiguous"
        with pytest.raises(MCPError) as denied:
            await subscribe(client, "cartograph://main/content/MEM://files/se%63ret/key")
        assert denied.value.error.data["code"] == "resource_denied"
        await subscribe(client, "cartograph://main/content/MEM://sm%61ll")
        assert await touch(client) == "notified"  # the upstream holds mem://small itself
        assert await updates.next() == "cartograph://main/content/mem://small"
        await unsubscribe(client, "cartograph://main/content/Mem://SMALL")
        assert await touch(client) == "not subscribed"
    records = audited(tmp_path, "resources/subscribe") + audited(tmp_path, "resources/unsubscribe")
    assert records == [
        ("content", "mem://files/secret%2Fkey", "resource_uri_ambiguous"),
        ("content", SECRET, "resource_denied"),
        ("content", "mem://small", "ok"),
        ("content", "mem://small", "ok"),
    ]


async def test_attack_the_routed_mount_judges_the_same_canonical_spelling(tmp_path: Path) -> None:
    """Routed by the URI's catalog, then judged by that catalog exactly as on its own mount."""
    with (
        serve_http(files_config(tmp_path), "--mount-mode", "routed") as http,
        anyio.fail_after(150),
    ):
        async with mcp_client(f"{http.mcp}/routed", mode="legacy") as routed:
            await connected(routed)
            assert await read_refused(routed, FILES + "secret%2Fkey") == "resource_uri_ambiguous"
            encoded = "cartograph://main/%63ontent/MEM://files/public/../secret/key"
            assert await read_refused(routed, encoded) == "resource_denied"
    reads = audited(tmp_path, "resources/read")
    assert ("content", "mem://files/secret%2Fkey", "resource_uri_ambiguous") in reads
    assert ("content", SECRET, "resource_denied") in reads
