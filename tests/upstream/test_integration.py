"""Integration: the real third-party demo servers, as subprocesses and over loopback HTTP.

Needs ``scripts/setup`` (npm servers in demo/node_modules, Python servers in
demo/.runtime); each test skips with that reason when its server is absent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cartograph.config.loader import load_config
from cartograph.config.model import ServerConfig, Transport
from cartograph.demo.loopback import everything_available, everything_over_http
from cartograph.upstream.session import UpstreamSession

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

DEMO = Path(__file__).resolve().parents[2] / "demo"
CONFIG = load_config(DEMO / "cartograph.toml", environ={})
STDIO_SERVERS = [s for s in CONFIG.servers if s.transport == "stdio"]

# One harmless call per server that has one: (tool, arguments, text expected in the result).
HARMLESS: dict[str, tuple[str, dict[str, Any], str]] = {
    "everything": ("echo", {"message": "cartograph-hello"}, "cartograph-hello"),
    "time": ("get_current_time", {"timezone": "UTC"}, "UTC"),
    "calculator": ("calculate", {"expression": "6*7"}, "42"),
    "filesystem": ("list_allowed_directories", {}, "files"),
}


def _installed(cfg: ServerConfig) -> bool:
    assert cfg.command is not None and cfg.cwd is not None
    if cfg.command == "node":
        return (cfg.cwd / cfg.args[0]).is_file()
    return os.access(cfg.command, os.X_OK)


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("cfg", STDIO_SERVERS, ids=lambda c: c.name)
async def test_each_demo_server_lists_its_tools_over_stdio(cfg: ServerConfig) -> None:
    if not _installed(cfg):
        pytest.skip(f"{cfg.name} is not installed; run scripts/setup")
    session = await UpstreamSession.open(cfg)
    try:
        server = await session.list_tools()
        assert server.tools, f"{cfg.name} listed no tools"
        assert len({t.name for t in server.tools}) == len(server.tools)
        if cfg.name in HARMLESS:
            tool, arguments, expected = HARMLESS[cfg.name]
            result = await session.call_tool(tool, arguments, timeout=30)
            assert not result.is_error, _text(result)
            assert expected in _text(result)
    finally:
        await session.aclose()
    assert not session.alive


@pytest.mark.parametrize("mode", ["streamableHttp", "sse"])
async def test_server_everything_over_loopback_http_lists_and_echoes(mode: str) -> None:
    if not everything_available(DEMO):
        pytest.skip("server-everything is not installed; run scripts/setup")
    transport: Transport = "streamable-http" if mode == "streamableHttp" else "sse"
    path = "/mcp" if mode == "streamableHttp" else "/sse"
    async with everything_over_http(DEMO, mode=mode, export=False) as port:  # type: ignore[arg-type]
        cfg = ServerConfig(
            name="everything-http",
            transport=transport,
            url=f"http://127.0.0.1:{port}{path}",
            connect_timeout=20,
        )
        session = await UpstreamSession.open(cfg)
        try:
            server = await session.list_tools()
            result = await session.call_tool("echo", {"message": "over-http"}, timeout=20)
        finally:
            await session.aclose()
    assert "echo" in {t.name for t in server.tools}
    assert "over-http" in _text(result)


async def test_the_demo_http_upstream_only_listens_on_loopback() -> None:
    if not everything_available(DEMO):
        pytest.skip("server-everything is not installed; run scripts/setup")
    async with everything_over_http(DEMO, export=False) as port:
        listeners = _listeners(port)
    assert listeners == ["127.0.0.1"]


def _listeners(port: int) -> list[str]:
    """Local addresses listening on ``port`` (from /proc/net/tcp{,6})."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hexport = local.rsplit(":", 1)
            if state == "0A" and int(hexport, 16) == port:
                found.append(_decode(address))
    return found


def _decode(address: str) -> str:
    if len(address) == 8:
        return ".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0))
    return "ipv6:" + address
