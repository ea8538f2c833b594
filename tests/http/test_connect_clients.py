"""connect writes what each client accepts; doctor checks every client offline; adopt moves servers.

The far side is real: ``cartograph serve --http`` as a subprocess over a
real upstream, or the HTTP app with its real transport; the near side is
the SDK's stdio client running the entry exactly as the client file says.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from cartograph.cli.connect import PROJECT_FILE
from cartograph.cli.main import build_app
from tests.helpers.serving import serve_http
from tests.helpers.support import SCRIPTABLE, scriptable, toml_for
from tests.http.support import assemble, serving

FILES = Path(__file__).parents[1] / "config" / "client_files"
runner = CliRunner()


def _cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(build_app(), list(args))
    return result.exit_code, result.output


def _servers(path: Path, key: str = "mcpServers") -> dict[str, Any]:
    from cartograph.config import jsonc

    return dict(jsonc.loads(path.read_text(), where=str(path))[key])


def _doctor() -> dict[tuple[str, str], dict[str, str]]:
    _, out = _cli("doctor", "--json")
    return {(f["client"], f["entry"]): f for f in json.loads(out)}


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "cartograph.toml"
    config.write_text(toml_for(tmp_path / "state", scriptable("calc")))
    return config


def test_claude_desktop_gets_a_stdio_bridge_entry_for_an_http_server_not_a_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    desktop = tmp_path / "claude_desktop_config.json"
    shutil.copy(FILES / "claude_desktop_config.json", desktop)
    with serving(assemble(("alpha",)).app) as base:
        code, out = _cli(
            "connect", "--url", base, "--client", "claude-desktop", "--target", str(desktop)
        )
    assert code == 0, out
    entry = _servers(desktop)["cartograph"]
    assert "url" not in entry
    assert entry["command"] == sys.executable
    assert entry["args"][-3:] == ["bridge", "--url", f"{base}/mcp/alpha"]
    assert "cartograph-work" not in _servers(desktop)  # a stale URL entry of ours is gone
    assert "filesystem" in _servers(desktop)
    assert _doctor()[("claude-desktop", "cartograph")]["problem"] == "ok"


def test_doctor_flags_the_url_entry_claude_desktop_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    desktop = tmp_path / "claude_desktop_config.json"
    config = _config(tmp_path)
    assert (
        _cli(
            "connect",
            "--config",
            str(config),
            "--client",
            "claude-desktop",
            "--target",
            str(desktop),
        )[0]
        == 0
    )
    servers = _servers(desktop)
    servers["remote"] = {"url": "http://127.0.0.1:8765/mcp/work"}  # what main used to write
    desktop.write_text(json.dumps({"mcpServers": servers}))
    found = _doctor()
    assert found[("claude-desktop", "remote")]["problem"] == "invalid"
    assert "only stdio" in found[("claude-desktop", "remote")]["detail"]


@pytest.mark.anyio
async def test_the_bridge_entry_reaches_a_real_cartograph_http_server_end_to_end(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    desktop = tmp_path / "claude_desktop_config.json"
    with serve_http(config) as served:
        code, out = await anyio.to_thread.run_sync(
            lambda: _cli(
                "connect", "--url", served.base, "--client", "claude-desktop",
                "--target", str(desktop), "--project-file", str(tmp_path / PROJECT_FILE),
            )
        )  # fmt: skip
        assert code == 0, out
        entry = _servers(desktop)["cartograph"]
        params = StdioServerParameters(
            command=entry["command"], args=entry["args"], env=dict(os.environ)
        )
        with anyio.fail_after(90):
            async with Client(params) as client:
                tools = await client.list_tools()
                assert [t.name for t in tools.tools] == ["discover", "status", "call"]
                seen: list[float] = []

                async def on_progress(
                    progress: float, total: float | None, message: str | None
                ) -> None:
                    seen.append(progress)

                result = await client.call_tool(
                    "call", {"server": "calc", "tool": "add", "arguments": {"a": 20, "b": 22}}
                )
                assert "".join(getattr(b, "text", "") for b in result.content) == "42"
                # server -> client notifications cross the bridge too (progress, mid-call)
                stepped = await client.call_tool(
                    "call",
                    {"server": "calc", "tool": "progress", "arguments": {"steps": 3}},
                    progress_callback=on_progress,
                )
                assert "done" in "".join(getattr(b, "text", "") for b in stepped.content)
                assert seen == [1, 2, 3]


def test_doctor_reports_bad_json_with_file_and_line_instead_of_crashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path)
    target = tmp_path / ".mcp.json"
    assert _cli("connect", "--config", str(config), "--client", "claude-code")[0] == 0
    target.write_text('{\n  "mcpServers": {\n    "cartograph": {"command": "x",}\n    oops\n}\n')
    code, out = _cli("doctor", "--json")
    assert code == 1
    [finding] = json.loads(out)
    assert finding["problem"] == "unreadable"
    assert str(target) in finding["detail"] and "line 4" in finding["detail"]


def test_doctor_checks_stdio_entries_and_says_a_command_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path)
    assert _cli("connect", "--config", str(config), "--client", "cursor")[0] == 0
    assert _doctor()[("cursor", "cartograph")]["problem"] == "ok"
    target = tmp_path / ".cursor/mcp.json"
    servers = _servers(target)
    servers["cartograph"]["command"] = str(tmp_path / "gone/python")
    servers["remote"] = {
        "url": "https://api.example.com/mcp",
        "headers": {"Authorization": "Bearer ${TOKEN}"},
    }
    servers["bad header"] = {"url": "https://api.example.com/mcp", "headers": {"X Token": "a"}}
    servers["relative"] = {"url": "/mcp"}
    target.write_text(json.dumps({"mcpServers": servers}))
    found = _doctor()
    assert found[("cursor", "cartograph")]["problem"] == "invalid"
    assert "does not exist" in found[("cursor", "cartograph")]["detail"]
    assert "${env:VAR}" in found[("cursor", "remote")]["detail"]
    assert "header name" in found[("cursor", "bad header")]["detail"]
    assert "absolute" in found[("cursor", "relative")]["detail"]


def test_doctor_tracks_every_client_connected_not_only_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path)
    for client in ("claude-code", "cursor", "vscode"):
        assert _cli("connect", "--config", str(config), "--client", client)[0] == 0
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')  # the first one broken later
    found = _doctor()
    assert found[("claude-code", "cartograph")]["problem"] == "missing"
    assert found[("cursor", "cartograph")]["problem"] == "ok"
    assert found[("vscode", "cartograph")]["problem"] == "ok"


def test_scopes_write_the_user_files_of_claude_code_and_cursor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text('{"numStartups": 3, "projects": {}}')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path)
    assert (
        _cli("connect", "--config", str(config), "--client", "claude-code", "--scope", "user")[0]
        == 0
    )
    assert (
        _cli("connect", "--config", str(config), "--client", "cursor", "--scope", "global")[0] == 0
    )
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["numStartups"] == 3 and "cartograph" in claude["mcpServers"]
    assert "cartograph" in _servers(home / ".cursor/mcp.json")
    assert not (tmp_path / ".mcp.json").exists()
    code, _ = _cli(
        "connect", "--config", str(config), "--client", "claude-desktop", "--scope", "project"
    )
    assert code != 0


def test_stdio_connect_with_two_catalogs_writes_one_entry_per_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path)
    config.write_text(
        config.read_text()
        + '\n[[catalogs]]\nname = "work"\nservers = ["calc"]\n'
        + '\n[[catalogs]]\nname = "home"\nservers = ["calc"]\n'
    )
    assert _cli("connect", "--config", str(config), "--client", "vscode")[0] == 0
    servers = _servers(tmp_path / ".vscode/mcp.json", "servers")
    assert set(servers) == {"cartograph-work", "cartograph-home"}
    assert servers["cartograph-work"]["args"][-2:] == ["--catalog-name", "work"]


def _cursor_project(tmp_path: Path) -> tuple[Path, Path]:
    target = tmp_path / ".cursor" / "mcp.json"
    target.parent.mkdir()
    target.write_text(
        '{\n  // my servers\n  "mcpServers": {\n'
        f'    "calc": {{"command": {json.dumps(sys.executable)}, '
        f'"args": [{json.dumps(str(SCRIPTABLE))}, "--start-delay", "0"], '
        '"env": {"HOME_DIR": "${userHome}", "TOKEN": "${env:CALC_TOKEN}"}, '
        '"disabledTools": ["crash"]}\n'
        "  }\n}\n"
    )
    config = tmp_path / "cartograph.toml"
    config.write_text(
        'state_dir = "state"\n\n[index]\nembedder = "fake"\n\n[defaults]\nprotocol = "legacy"\n'
    )
    return target, config


def test_adopt_dry_run_shows_the_diff_of_both_files_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    target, config = _cursor_project(tmp_path)
    before = (target.read_text(), config.read_text())
    code, out = _cli(
        "connect", "--client", "cursor", "--config", str(config), "--adopt", "--dry-run"
    )
    assert code == 0, out
    assert (target.read_text(), config.read_text()) == before
    assert not (tmp_path / PROJECT_FILE).exists()
    assert '+[mcpServers."calc"]' in out
    assert '-    "calc"' in out
    assert '+    "cartograph"' in out


def test_adopt_moves_the_clients_servers_behind_cartograph_and_they_still_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CALC_TOKEN", "t-1")
    target, config = _cursor_project(tmp_path)
    original = target.read_text()
    code, out = _cli("connect", "--client", "cursor", "--config", str(config), "--adopt")
    assert code == 0, out
    assert set(_servers(target)) == {"cartograph"}
    assert "// my servers" in target.read_text()
    assert target.with_name("mcp.json.bak").read_text() == original
    assert (tmp_path / "cartograph.toml.bak").exists()
    from cartograph.config.loader import load_config

    [calc] = load_config(config).servers
    assert calc.env == {"HOME_DIR": str(Path.home()), "TOKEN": "t-1"}
    assert calc.disabled_tools == ("crash",)
    args = ["--config", str(config), "--unsafe-throwaway-key"]
    code, out = _cli("call", "calc", "add", '{"a": 2, "b": 3}', *args)
    assert code == 0 and out.strip().endswith("5"), out
    assert _doctor()[("cursor", "cartograph")]["problem"] == "ok"


def test_the_inspector_gets_a_streamable_http_entry_or_a_bridge_for_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cartograph.config.model import HttpConfig, TokenConfig
    from cartograph.server.auth import TokenAuthority

    monkeypatch.chdir(tmp_path)
    target = tmp_path / "mcp-inspector.json"
    with serving(assemble(("alpha",)).app) as base:
        assert _cli("connect", "--url", base, "--client", "inspector")[0] == 0
    assert _servers(target)["cartograph"] == {"type": "streamable-http", "url": f"{base}/mcp/alpha"}

    token = "token-for-alice-0123456789abcdef"
    monkeypatch.setenv("ALICE_TOKEN", token)
    http = HttpConfig(tokens=(TokenConfig(principal="alice", token_env="ALICE_TOKEN"),))
    authority = TokenAuthority.from_config(http, {"ALICE_TOKEN": token})
    with serving(assemble(("alpha",), authority=authority).app) as base:
        code, out = _cli(
            "connect", "--url", base, "--client", "inspector", "--token-env", "ALICE_TOKEN"
        )
    assert code == 0, out
    entry = _servers(target)["cartograph"]
    assert entry["type"] == "stdio"
    assert entry["args"][-5:] == [
        "bridge",
        "--url",
        f"{base}/mcp/alpha",
        "--token-env",
        "ALICE_TOKEN",
    ]
    assert token not in target.read_text()
