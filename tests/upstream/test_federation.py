"""connect_federation: concurrent, per-server timeouts, failures reported, others unaffected."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.catalog.snapshot import save_catalog
from cartograph.config.model import Config, ServerConfig
from cartograph.errors import NameCollisionError
from cartograph.upstream.federation import (
    ServerReport,
    connect_federation,
    load_catalog_for,
)
from cartograph.upstream.session import UpstreamSession
from tests.upstream.support import FakeUpstream, fake

pytestmark = pytest.mark.anyio


def stdio(name: str, code: str, *, timeout: float = 10.0) -> ServerConfig:
    return ServerConfig(
        name=name, command=sys.executable, args=("-c", code), connect_timeout=timeout
    )


def in_process(upstreams: dict[str, FakeUpstream]):  # type: ignore[no-untyped-def]
    """An opener that serves some servers in process and spawns the rest for real."""

    async def opener(cfg: ServerConfig) -> UpstreamSession:
        if cfg.name in upstreams:
            return await UpstreamSession.open(cfg, target=upstreams[cfg.name].server(cfg.name))
        return await UpstreamSession.open(cfg)

    return opener


EXITS_AT_START = "import sys; print('fatal: missing config file', file=sys.stderr); sys.exit(3)"
NEVER_ANSWERS = "import time; time.sleep(60)"


async def test_broken_servers_are_reported_and_the_others_still_connect() -> None:
    config = Config(
        servers=(
            ServerConfig(name="good", command="unused"),
            stdio("exits", EXITS_AT_START),
            stdio("silent", NEVER_ANSWERS, timeout=0.5),
            ServerConfig(name="missing", command="/nonexistent/cartograph-test-server"),
            ServerConfig(name="off", command="unused", enabled=False),
        )
    )
    seen: list[ServerReport] = []
    result = await connect_federation(
        config, progress=seen.append, opener=in_process({"good": fake(["echo"])})
    )
    try:
        by_name = {r.name: r for r in result.reports}
        assert [s.name for s in result.catalog.servers] == ["good"]
        assert by_name["good"].status == "connected"
        assert by_name["good"].tool_count == 1
        assert by_name["off"].status == "disabled"
        codes = {n: r.error.code for n, r in by_name.items() if r.error is not None}
        assert codes == {
            "exits": "upstream_exited",
            "silent": "upstream_timeout",
            "missing": "upstream_command_not_found",
        }
        assert sorted(r.name for r in seen) == ["exits", "good", "missing", "silent"]
        assert list(result.sessions) == ["good"]
    finally:
        await result.aclose()


async def test_a_server_that_dies_at_start_up_reports_its_stderr_tail_not_an_exception_group() -> (
    None
):
    config = Config(servers=(stdio("exits", EXITS_AT_START),))
    result = await connect_federation(config)
    error = result.reports[0].error
    assert error is not None
    assert not isinstance(error, BaseExceptionGroup)
    assert "fatal: missing config file" in error.message


@pytest.mark.promise("P-LOG-1")
async def test_configured_env_values_are_redacted_from_the_stderr_tail() -> None:
    code = "import os, sys; print('token=' + os.environ['API_TOKEN'], file=sys.stderr); sys.exit(1)"
    server = stdio("leaky", code).model_copy(update={"env": {"API_TOKEN": "s3cr3t-value"}})
    result = await connect_federation(Config(servers=(server,)))
    error = result.reports[0].error
    assert error is not None
    assert "s3cr3t-value" not in error.message
    assert "token=***" in error.message


async def test_one_slow_server_does_not_hold_up_the_others() -> None:
    config = Config(
        servers=(
            stdio("silent", NEVER_ANSWERS, timeout=1.0),
            ServerConfig(name="a", command="unused"),
            ServerConfig(name="b", command="unused"),
        )
    )
    upstreams = {"a": fake(["x"]), "b": fake(["y"])}
    order: list[str] = []
    result = await connect_federation(
        config, opener=in_process(upstreams), progress=lambda r: order.append(r.name)
    )
    await result.aclose()
    assert order[-1] == "silent"
    assert {r.name: r.status for r in result.reports} == {
        "silent": "failed",
        "a": "connected",
        "b": "connected",
    }


@pytest.mark.promise("P-NAME-1")
async def test_a_server_whose_tools_collide_after_normalisation_is_rejected() -> None:
    config = Config(
        servers=(
            ServerConfig(name="clash", command="unused"),
            ServerConfig(name="fine", command="unused"),
        )
    )
    upstreams = {"clash": fake(["get_file", "getFile"]), "fine": fake(["get_file"])}
    result = await connect_federation(config, opener=in_process(upstreams))
    await result.aclose()
    clash = result.reports[0]
    assert clash.status == "failed"
    assert clash.error is not None and clash.error.code == "name_collision"
    assert "'get_file'" in clash.error.message and "'getFile'" in clash.error.message
    assert [s.name for s in result.catalog.servers] == ["fine"]


async def test_load_catalog_for_prefers_the_snapshot_over_live_servers(tmp_path: Path) -> None:
    snapshot = Catalog(servers=(ServerDef(name="snap", tools=(ToolDef(name="t"),)),))
    path = tmp_path / "catalog.json"
    save_catalog(snapshot, path)
    config = Config(servers=(ServerConfig(name="never", command="/nonexistent/x"),))
    assert await load_catalog_for(config, path) == snapshot
    from_config = config.model_copy(update={"catalog": path})
    assert await load_catalog_for(from_config) == snapshot


async def test_load_catalog_for_connects_lists_and_closes_without_a_snapshot() -> None:
    config = Config(servers=(stdio("exits", EXITS_AT_START),))
    catalog = await load_catalog_for(config, None)
    assert catalog.servers == ()


@pytest.mark.promise("P-NAME-1")
@pytest.mark.parametrize(
    ("servers", "both", "code"),
    [
        (
            (ServerDef(name="s", tools=(ToolDef(name="get_file"), ToolDef(name="getFile"))),),
            ("'get_file'", "'getFile'"),
            "name_collision",
        ),
        (
            (ServerDef(name="my-server"), ServerDef(name="my_server")),
            ("'my-server'", "'my_server'"),
            "name_collision",
        ),
        (
            (ServerDef(name="s", tools=(ToolDef(name="Discover"),)),),
            ("'Discover'", "'discover'"),
            "name_reserved",
        ),
    ],
    ids=["tools", "servers", "proxy-tool"],
)
async def test_a_snapshot_with_colliding_names_is_refused_naming_the_file_and_both_sources(
    tmp_path: Path, servers: tuple[ServerDef, ...], both: tuple[str, str], code: str
) -> None:
    path = tmp_path / "catalog.json"
    save_catalog(Catalog(servers=servers), path)
    with pytest.raises(NameCollisionError) as refused:
        await load_catalog_for(Config(), path)
    assert refused.value.code == code
    assert str(path) in refused.value.message
    assert all(name in refused.value.message for name in both)
