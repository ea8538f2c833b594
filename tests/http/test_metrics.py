"""``GET /metrics``: Prometheus text from the real serving path, under the HTTP surface's rules.

The app is ``http_app`` (what ``serve --http`` runs) with three catalogs over a
real streamable-HTTP upstream; calls come from the SDK's client; the scrape
is parsed with ``prometheus_client``'s own parser.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cartograph.server.http import ServedApp, http_app
from tests.http.support import http_client, mcp_client, serving, tool_text
from tests.http.three_catalogs import ENV, SCOPED, TOKEN, three_catalogs

pytestmark = pytest.mark.anyio

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(base: str, token: str | None) -> tuple[int, Samples]:
    with http_client(base, token) as http:
        response = http.get("/metrics")
    if response.status_code != 200:
        return response.status_code, {}
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return 200, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def catalogs_in(samples: Samples) -> set[str]:
    return {dict(labels).get("catalog", "") for _, labels in samples} - {""}


@pytest.fixture
async def served(tmp_path: Path, upstream: tuple[str, object]) -> AsyncIterator[str]:
    config = three_catalogs(tmp_path / "state", upstream[0])
    async with http_app(config, unsafe_throwaway_key=True, environ=ENV) as app:
        assert isinstance(app, ServedApp)
        with serving(app.app) as base:
            yield base


async def test_metrics_count_calls_errors_latency_and_discover_per_catalog(served: str) -> None:
    _, before = scrape(served, TOKEN)
    async with mcp_client(f"{served}/mcp/alpha", token=TOKEN) as client:
        ok = await client.call_tool(
            "alpha_call", {"server": "echo", "tool": "echo", "arguments": {"message": "hi"}}
        )
        bad = await client.call_tool(
            "alpha_call", {"server": "echo", "tool": "nope", "arguments": {}}
        )
        await client.call_tool("alpha_discover", {"task": "echo a message back"})
    assert not ok.is_error and bad.is_error, tool_text(bad)
    status, after = scrape(served, TOKEN)
    assert status == 200
    call = {"catalog": "alpha", "proxy_tool": "call", "server": "echo", "tool": "echo"}
    for name, labels, delta in (
        ("cartograph_calls_total", {**call, "outcome": "ok"}, 1.0),
        ("cartograph_call_duration_seconds_count", call, 1.0),
        ("cartograph_call_errors_total", {**call, "tool": "unknown"}, 1.0),
        ("cartograph_call_errors_total", call, 0.0),
        ("cartograph_discover_duration_seconds_count", {"catalog": "alpha"}, 1.0),
    ):
        assert value(after, name, **labels) - value(before, name, **labels) == delta, name
    answered = sum(
        value(after, "cartograph_discover_total", catalog="alpha", abstained=a)
        - value(before, "cartograph_discover_total", catalog="alpha", abstained=a)
        for a in ("true", "false")
    )
    assert answered == 1.0
    assert value(after, "cartograph_upstream_up", catalog="alpha", server="echo") == 1.0
    assert value(after, "cartograph_upstream_breaker_state", catalog="alpha", server="echo") == 0
    assert value(after, "cartograph_cards_verified", catalog="alpha") == 1.0
    assert value(after, "cartograph_tools_drifted", catalog="alpha") == 0.0
    assert value(after, "cartograph_tools_servable", catalog="alpha") >= 2.0


@pytest.mark.promise("P-METRICS-1")
async def test_attack_made_up_names_do_not_grow_the_scrape(served: str) -> None:
    """Label values come from the federation's names: 200 invented ones add no series."""
    async with mcp_client(f"{served}/mcp/alpha", token=TOKEN) as client:
        await client.call_tool("alpha_call", {"server": "echo", "tool": "x", "arguments": {}})
        await client.call_tool("alpha_call", {"server": "nowhere", "tool": "x", "arguments": {}})
        _, warm = scrape(served, TOKEN)
        for n in range(100):
            invented = {"server": f"srv{n}", "tool": f"tool{n}", "arguments": {}}
            assert (await client.call_tool("alpha_call", invented)).is_error
            on_echo = {"server": "echo", "tool": f"tool{n}", "arguments": {}}
            assert (await client.call_tool("alpha_call", on_echo)).is_error
    _, after = scrape(served, TOKEN)
    assert set(after) == set(warm)  # the same series, only their counts grew
    servers = {dict(labels).get("server") for _, labels in after} - {None, ""}
    tools = {dict(labels).get("tool") for _, labels in after} - {None, ""}
    assert servers <= {"echo", "unknown"} and "srv7" not in servers
    assert "tool7" not in tools and "unknown" in tools
    unknown = {"catalog": "alpha", "proxy_tool": "call", "server": "unknown", "tool": "unknown"}
    grown = value(after, "cartograph_call_errors_total", **unknown)
    assert grown - value(warm, "cartograph_call_errors_total", **unknown) == 100.0


@pytest.mark.promise("P-AUTH-5")
async def test_metrics_need_a_token_and_show_only_the_catalogs_it_reaches(served: str) -> None:
    anonymous, _ = scrape(served, None)
    wrong, _ = scrape(served, "not-a-configured-token-0123456789")
    _, everything = scrape(served, TOKEN)
    _, scoped = scrape(served, SCOPED)
    assert (anonymous, wrong) == (401, 401)
    # One registry per process: other runtimes of this process may report too.
    assert {"alpha", "beta", "gamma"} <= catalogs_in(everything)
    assert catalogs_in(scoped) == {"alpha"}


async def test_metrics_are_public_on_a_loopback_server_without_tokens(
    tmp_path: Path,
    upstream: tuple[str, object],
) -> None:
    config = three_catalogs(tmp_path / "state", upstream[0], tokens=False)
    async with http_app(config, unsafe_throwaway_key=True) as app:
        with serving(app.app) as base:
            status, samples = scrape(base, None)
    assert status == 200
    assert {"alpha", "beta", "gamma"} <= catalogs_in(samples)
