"""A huge name a client sends is not echoed back whole, nor written whole to the audit log.

Through `cartograph serve` (stdio) with the SDK client, against ``tests/helpers/content.py``.
Before issue 24 a 200 KB resource URI came back inside its own error and was written as a
200 KB audit line; several megabytes also took the event loop a second to normalise. Now a
URI (or prompt name) over 8192 characters is refused before it is read
(``resource_uri_too_long``, ``prompt_name_too_long``), and every name a refusal or audit
record repeats is kept to 512 characters: its start, its length and its SHA-256
(``cartograph.echo``), so the operator can still match the record against what was sent.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceTemplateReference, TextContent

from cartograph.echo import MAX_ECHO, MAX_MESSAGE, echoed
from tests.server.content_support import FILES, served, subscribe

pytestmark = pytest.mark.anyio

HUGE = 200_000
AUDIT_LINE = 4 * MAX_ECHO  # a record names a few bounded names and a little more


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def audit_lines(tmp_path: Path) -> list[str]:
    return (tmp_path / "audit.jsonl").read_text("utf-8").splitlines()


async def refusal(call: object) -> MCPError:
    try:
        await call  # type: ignore[misc]  # any of the client's request coroutines
    except MCPError as exc:
        return exc
    pytest.fail("the request was answered")


def test_a_long_value_is_echoed_as_its_start_length_and_digest() -> None:
    value = "a" * HUGE
    short = echoed(value)
    assert len(short) == MAX_ECHO
    assert short.startswith("a" * 400)
    assert short.endswith(f"…({HUGE} chars, sha256 {digest(value)})")
    assert echoed(short) == short  # a record read back and written again keeps its name
    assert echoed("mem://small") == "mem://small"


async def test_attack_200kb_resource_uri_is_refused_before_it_is_read_and_not_echoed(
    tmp_path: Path,
) -> None:
    uris = [
        FILES + "a" * HUGE,
        FILES + "%2F" * HUGE,  # ambiguous too, but never canonicalised: too long first
        "cartograph://elsewhere/content/" + "b" * HUGE,  # not even this catalog's
    ]
    async with served(tmp_path) as client:
        for uri in uris:
            refused = await refusal(client.read_resource(uri, cache_mode="bypass"))
            assert refused.error.data["code"] == "resource_uri_too_long"
            assert len(refused.error.message) < 2 * MAX_ECHO
            assert digest(uri) in refused.error.message
        refused = await refusal(subscribe(client, uris[0]))
        assert refused.error.data["code"] == "resource_uri_too_long"
        template = ResourceTemplateReference(uri=uris[0])
        refused = await refusal(client.complete(template, {"name": "x" * HUGE, "value": "v"}))
        assert refused.error.data["code"] == "resource_uri_too_long"
    lines = audit_lines(tmp_path)
    assert max(len(line) for line in lines) < AUDIT_LINE
    assert all(any(digest(uri) in line for line in lines) for uri in uris)


async def test_attack_ambiguous_uri_just_under_the_limit_is_echoed_bounded(tmp_path: Path) -> None:
    uri = FILES + "secret%2F" + "k" * 8000
    async with served(tmp_path) as client:
        refused = await refusal(client.read_resource(uri, cache_mode="bypass"))
        assert refused.error.data["code"] == "resource_uri_ambiguous"
        assert len(refused.error.message) < 2 * MAX_ECHO
    assert max(len(line) for line in audit_lines(tmp_path)) < AUDIT_LINE


async def test_attack_200kb_prompt_name_is_refused_and_not_echoed(tmp_path: Path) -> None:
    name = "content/" + "p" * HUGE
    async with served(tmp_path) as client:
        refused = await refusal(client.get_prompt(name, {"n" * HUGE: "Ada"}))
        assert refused.error.data["code"] == "prompt_name_too_long"
        assert len(refused.error.message) < 2 * MAX_ECHO
        refused = await refusal(client.get_prompt("nowhere" + "q" * HUGE, None))
        assert refused.error.data["code"] == "unknown_prompt"
        assert len(refused.error.message) < 2 * MAX_ECHO
    assert max(len(line) for line in audit_lines(tmp_path)) < AUDIT_LINE


async def test_attack_200kb_server_and_tool_names_in_a_call_are_not_echoed(
    tmp_path: Path,
) -> None:
    server, tool = "s" * HUGE, "t" * HUGE
    async with served(tmp_path) as client:
        result = await client.call_tool(
            "call", {"server": server, "tool": tool, "arguments": {"k" * HUGE: 1}}
        )
        assert result.is_error
        text = "".join(b.text for b in result.content if isinstance(b, TextContent))
        assert len(text) <= MAX_MESSAGE + 100
        assert len(str(result.structured_content)) < 2 * MAX_MESSAGE
        named = await client.call_tool(HUGE * "x", {})
        assert named.is_error
        assert all(len(b.text) <= MAX_MESSAGE + 100 for b in named.content if b.type == "text")
        assert len(str(named.structured_content)) < 2 * MAX_MESSAGE
    lines = audit_lines(tmp_path)
    assert max(len(line) for line in lines) < AUDIT_LINE
    assert any(digest(server) in line for line in lines)
