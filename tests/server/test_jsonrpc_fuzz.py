"""The JSON-RPC surface under arbitrary input (P-REL-8).

Raw lines go through the same stdio transport and proxy server ``cartograph
serve`` runs, against a real upstream. Whatever arrives, every line that
comes back is a JSON-RPC message, every error is a documented one (a JSON-RPC
protocol code, or a tool result carrying one of the proxy's error codes), and
the proxy still answers a ``ping`` afterwards. ``jsonrpc_corpus/`` holds
inputs that probe the parser's and the dispatcher's edges; each runs as a
regression test.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cartograph.error_codes import REGISTRY
from tests.server.support import JSON
from tests.server.wire import wire

pytestmark = pytest.mark.promise("P-REL-8")

CORPUS = Path(__file__).parent / "jsonrpc_corpus"
# Parse error, invalid request, method not found, invalid params (JSON-RPC 2.0 §5.1).
PROTOCOL_CODES = {-32700, -32600, -32601, -32602}


def assert_documented(replies: list[str]) -> None:
    for raw in replies:
        message = json.loads(raw)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", raw
        if "error" in message:
            assert message["error"]["code"] in PROTOCOL_CODES, raw
        result = message.get("result")
        if isinstance(result, dict) and result.get("isError"):
            error = (result.get("structuredContent") or {}).get("error", {})
            assert error.get("code") in REGISTRY, raw


@pytest.mark.anyio
async def test_seed_corpus_yields_only_documented_errors_and_the_proxy_keeps_serving(
    tmp_path: Path,
) -> None:
    seeds = sorted(CORPUS.iterdir())
    assert len(seeds) >= 20
    async with wire(tmp_path) as connected:  # one proxy for all: each seed must leave it serving
        for seed in seeds:
            for line in seed.read_text(encoding="utf-8").removesuffix("\n").split("\n"):
                try:
                    assert_documented(await connected.exchange(line))
                except (AssertionError, TimeoutError) as exc:
                    raise AssertionError(f"seed {seed.name}: {exc}") from exc


METHODS = st.sampled_from(
    ["tools/call", "tools/list", "ping", "initialize", "resources/list", "prompts/get", "x/y"]
)
TOOL_CALLS = st.fixed_dictionaries(
    {"name": st.sampled_from(["call", "discover", "status", "nope"]), "arguments": JSON}
)
MESSAGES = st.fixed_dictionaries(
    {
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]),
        "id": st.integers() | st.text(max_size=8) | st.none(),
        "method": METHODS,
        "params": TOOL_CALLS | JSON,
    }
)
LINES = MESSAGES.map(json.dumps) | JSON.map(json.dumps) | st.text(max_size=60)


def test_arbitrary_json_rpc_lines_yield_only_documented_errors(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with wire(tmp_path) as connected:

            @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
            @given(line=LINES)
            def fuzz(line: str) -> None:
                assert_documented(anyio.from_thread.run(connected.exchange, line))

            await anyio.to_thread.run_sync(fuzz)

    anyio.run(scenario)
