"""Importing client files keeps what they say: comments, variables, disabled tools, no self-loop.

Each file in ``client_files/`` follows its client's documentation (VS Code's
``mcp.json`` with comments and inputs, Cursor's interpolation, Claude Code's
``${VAR:-default}``, Claude Desktop's plain stdio entries).
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from cartograph.cli.main import build_app
from cartograph.cli.serve import pick_catalog
from cartograph.config.loader import load_config
from cartograph.errors import ConfigError
from cartograph.index.serving import policy_allows
from tests.helpers.support import SCRIPTABLE
from tests.server.stdio_serving import serve_params, text

FILES = Path(__file__).parent / "client_files"
runner = CliRunner()


def _import(tmp_path: Path, name: str, where: str) -> Path:
    """Copy a client file to where its client keeps it; a config importing it."""
    target = tmp_path / where
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FILES / name, target)
    config = tmp_path / "cartograph.toml"
    config.write_text(f"mcp_json = [{json.dumps(str(target))}]\n")
    return config


def test_a_vscode_file_with_comments_and_trailing_commas_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-test-token")
    config = load_config(_import(tmp_path, "vscode_mcp.jsonc", ".vscode/mcp.json"))
    servers = {s.name: s for s in config.servers}
    assert set(servers) == {"fetch", "github", "workspace-files"}
    assert servers["github"].headers == {"Authorization": "Bearer ghp-test-token"}
    assert servers["workspace-files"].args[-1] == str(tmp_path)  # the folder above .vscode


def test_a_syntax_error_in_a_jsonc_file_names_the_line(tmp_path: Path) -> None:
    config = _import(tmp_path, "vscode_mcp.jsonc", ".vscode/mcp.json")
    broken = tmp_path / ".vscode/mcp.json"
    lines = broken.read_text().splitlines()
    lines[14] = lines[14].replace('"command":', '"command"')  # line 15: a missing colon
    broken.write_text("\n".join(lines))
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert caught.value.code == "config_mcp_json"
    assert "line 15" in caught.value.message


def test_a_vscode_input_variable_refuses_its_server_naming_the_input(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = load_config(_import(tmp_path, "vscode_with_input.jsonc", ".vscode/mcp.json"))
    assert config.servers == ()  # the file's only server; others would still be imported
    (message,) = [r.getMessage() for r in caplog.records if "not imported" in r.getMessage()]
    assert "'Perplexity'" in message and "config_input_variable" in message
    assert "perplexity-key" in message
    assert "PERPLEXITY_API_KEY" in message  # the key that uses it


def test_cursor_variables_expand_and_env_references_never_reach_servers_literally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_KEY", "k-123")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-456")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = load_config(_import(tmp_path, "cursor_mcp.json", "project/.cursor/mcp.json"))
    servers = {s.name: s for s in config.servers}
    local = servers["local-server"]
    assert local.args == (f"{tmp_path / 'project'}/tools/mcp_server.py",)
    assert local.env == {"API_KEY": "k-123", "CACHE_DIR": f"{tmp_path}/home/.cache/local-server"}
    assert servers["remote-server"].headers == {"Authorization": "Bearer tok-456"}
    everything = json.dumps([s.model_dump(mode="json") for s in config.servers])
    assert "${" not in everything


def test_claude_code_defaults_apply_and_its_own_cartograph_entry_is_skipped_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("API_BASE_URL", raising=False)
    monkeypatch.setenv("API_KEY", "secret-key")
    with caplog.at_level(logging.WARNING, logger="cartograph.config.loader"):
        config = load_config(_import(tmp_path, "claude_code_mcp.json", ".mcp.json"))
    assert [s.name for s in config.servers] == ["api-server"]
    assert config.servers[0].url == "https://api.example.com/mcp"
    assert "skipped server 'cartograph'" in caplog.text


def test_claude_desktop_bridge_and_http_entries_of_cartograph_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="cartograph.config.loader"):
        config = load_config(_import(tmp_path, "claude_desktop_config.json", "claude.json"))
    assert [s.name for s in config.servers] == ["filesystem"]
    assert "'cartograph-work'" in caplog.text


def test_an_unknown_variable_form_is_refused_not_passed_on(tmp_path: Path) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text('[mcpServers.a]\ncommand = "x"\nargs = ["${config:foo}"]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert caught.value.code == "config_unknown_variable"


def test_disabled_tools_become_deny_rules_of_every_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_KEY", "k")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t")
    config = load_config(_import(tmp_path, "cursor_mcp.json", ".cursor/mcp.json"))
    policy = pick_catalog(config, None).policy
    assert not policy_allows(policy, "filesystem", "write_file")
    assert not policy_allows(policy, "filesystem", "move_file")
    assert policy_allows(policy, "filesystem", "read_file")


DISABLED_ADD = {
    "mcpServers": {
        "calc": {
            "command": sys.executable,
            "args": [str(SCRIPTABLE)],
            "disabledTools": ["add"],
        }
    }
}


def _calc_config(tmp_path: Path) -> Path:
    client_file = tmp_path / ".cursor" / "mcp.json"
    client_file.parent.mkdir()
    client_file.write_text(json.dumps(DISABLED_ADD))
    config = tmp_path / "cartograph.toml"
    config.write_text(
        f'state_dir = "state"\nmcp_json = [{json.dumps(str(client_file))}]\n'
        '[index]\nembedder = "fake"\n[defaults]\nprotocol = "legacy"\n'
    )
    return config


def test_a_disabled_tool_is_not_callable_through_the_cli(tmp_path: Path) -> None:
    config = _calc_config(tmp_path)
    args = ["--config", str(config), "--unsafe-throwaway-key"]
    refused = runner.invoke(build_app(), ["call", "calc", "add", '{"a": 1, "b": 2}', *args])
    assert refused.exit_code == 1, refused.output
    assert "tool_denied" in refused.output
    allowed = runner.invoke(build_app(), ["call", "calc", "echo", '{"text": "hi"}', *args])
    assert allowed.exit_code == 0, allowed.output


@pytest.mark.anyio
async def test_a_disabled_tool_is_neither_served_nor_callable_through_serve(
    tmp_path: Path,
) -> None:
    from mcp import Client

    config = _calc_config(tmp_path)
    with anyio.fail_after(120):
        async with Client(serve_params(config)) as client:
            found = await client.call_tool("discover", {"task": "add two integers", "k": 10})
            assert not found.is_error, text(found)
            listed = {t["tool"] for t in found.structured_content["tools"]}
            assert "add" not in listed
            refused = await client.call_tool(
                "call", {"server": "calc", "tool": "add", "arguments": {"a": 1, "b": 2}}
            )
            assert refused.is_error
            assert "tool_denied" in text(refused)
            echoed = await client.call_tool(
                "call", {"server": "calc", "tool": "echo", "arguments": {"text": "hi"}}
            )
            assert text(echoed) == "hi"


def test_connect_edits_a_vscode_file_without_losing_its_comments(tmp_path: Path) -> None:
    from cartograph.cli.client_files import ServerSpec, install_entry, remove_entries

    target = tmp_path / ".vscode" / "mcp.json"
    target.parent.mkdir()
    original = (FILES / "vscode_mcp.jsonc").read_text()
    target.write_text(original)
    install_entry(
        "vscode", "cartograph", ServerSpec(command="cartograph", args=("serve",)), path=target
    )
    edited = target.read_text()
    for comment in ("// 💡 Inputs are prompted", "/* a remote server", "// https://github.com"):
        assert comment in edited
    assert '"cartograph": {' in edited
    assert remove_entries("vscode", target, ["cartograph"]) is not None
    assert target.read_text() == original
