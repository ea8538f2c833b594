"""The config loader: valid files, the mcpServers import, and one test per error code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cartograph.config.loader import MAX_CONFIG_BYTES, load_config
from cartograph.errors import ConfigError, NameCollisionError


def write(tmp_path: Path, text: str, name: str = "cartograph.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(tmp_path: Path, text: str, **env: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), environ=env)
    return caught.value


# -- valid configs -------------------------------------------------------------------


def test_native_servers_load_with_paths_resolved_against_the_file(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
state_dir = "state"
[defaults]
connect_timeout = 12
[servers.local]
command = "bin/server"
args = ["--root", "files"]
[servers.remote]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer x" }
call_timeout = 5
""",
        ),
        environ={},
    )
    local, remote = config.servers
    assert config.state_dir == tmp_path / "state"
    assert local.transport == "stdio"
    assert local.command == str(tmp_path / "bin/server")
    assert local.cwd == tmp_path
    assert local.connect_timeout == 12
    assert remote.transport == "streamable-http"
    assert remote.call_timeout == 5
    assert config.source == tmp_path / "cartograph.toml"


def test_a_bare_command_is_left_for_path_lookup(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[servers.a]\ncommand = "node"\n'), environ={})
    assert config.servers[0].command == "node"


CLAUDE_DESKTOP = {
    "mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"A": "1"}},
        "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
        "events": {"url": "http://127.0.0.1:9/sse"},
        "old": {"command": "old-server", "disabled": True, "autoApprove": ["x"]},
    }
}


def test_the_standard_mcp_servers_json_imports_by_path(tmp_path: Path) -> None:
    (tmp_path / "claude.json").write_text(json.dumps(CLAUDE_DESKTOP))
    config = load_config(write(tmp_path, 'mcp_json = ["claude.json"]\n'), environ={})
    by_name = {s.name: s for s in config.servers}
    assert by_name["fs"].args == ("-y", "server-filesystem", ".")
    assert by_name["fs"].env == {"A": "1"}
    assert by_name["web"].transport == "streamable-http"
    assert by_name["web"].headers == {"X": "y"}
    assert by_name["events"].transport == "sse"
    assert by_name["old"].enabled is False
    assert [s.name for s in config.enabled_servers] == ["fs", "web", "events"]


def test_vs_code_servers_json_imports_too(tmp_path: Path) -> None:
    vscode = {"servers": {"t": {"type": "stdio", "command": "t"}}, "inputs": []}
    (tmp_path / "mcp.json").write_text(json.dumps(vscode))
    config = load_config(write(tmp_path, 'mcp_json = "mcp.json"\n'), environ={})
    assert [s.name for s in config.servers] == ["t"]


def test_the_standard_shape_is_accepted_inline(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, '[mcpServers.inline]\ncommand = "x"\nargs = ["a"]\n'), environ={}
    )
    assert config.servers[0].name == "inline"
    assert config.servers[0].args == ("a",)


def test_env_headers_and_url_expand_variables_with_defaults(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
[servers.a]
command = "x"
env = { TOKEN = "${MY_TOKEN}", LEVEL = "${LEVEL:-info}", PRICE = "$$5" }
[servers.b]
url = "http://127.0.0.1:${PORT:-3001}/mcp"
headers = { Authorization = "Bearer ${MY_TOKEN}" }
""",
        ),
        environ={"MY_TOKEN": "tok", "PORT": "4567"},
    )
    a, b = config.servers
    assert a.env == {"TOKEN": "tok", "LEVEL": "info", "PRICE": "$5"}
    assert b.url == "http://127.0.0.1:4567/mcp"
    assert b.headers == {"Authorization": "Bearer tok"}


# -- errors, one code each -----------------------------------------------------------------


def test_unknown_server_key_is_rejected_naming_file_server_and_key(tmp_path: Path) -> None:
    error = load_error(tmp_path, '[servers.alpha]\ncommand = "x"\ncomand = "y"\n')
    assert error.code == "config_unknown_key"
    assert "cartograph.toml" in error.message
    assert "'alpha'" in error.message and "'comand'" in error.message


def test_unknown_top_level_key_is_rejected(tmp_path: Path) -> None:
    assert load_error(tmp_path, "stat_dir = 'x'\n").code == "config_unknown_key"


def test_unknown_key_in_a_nested_section_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, "[gateway]\nmax_inflight = 3\n")
    assert error.code == "config_unknown_key"
    assert "gateway.max_inflight" in error.message


def test_unknown_key_in_an_imported_entry_is_rejected_naming_that_file(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps({"mcpServers": {"s": {"command": "x", "cmd": 1}}}))
    error = load_error(tmp_path, 'mcp_json = ["c.json"]\n')
    assert error.code == "config_unknown_key"
    assert "c.json" in error.message and "'s'" in error.message


def test_a_stdio_server_without_a_command_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, '[servers.a]\nargs = ["x"]\n')
    assert error.code == "config_missing_command"
    assert "'a'" in error.message and "'command'" in error.message


@pytest.mark.parametrize(
    "url", ["ftp://host/mcp", "not a url", "http://", "/relative/mcp", "http://[::1/mcp"]
)
def test_a_bad_url_is_rejected(tmp_path: Path, url: str) -> None:
    error = load_error(tmp_path, f'[servers.a]\ntransport = "sse"\nurl = "{url}"\n')
    assert error.code == "config_bad_url"


def test_an_http_server_without_a_url_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, '[servers.a]\ntransport = "streamable-http"\n')
    assert error.code == "config_bad_url"


def test_command_and_url_together_are_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, '[servers.a]\ncommand = "x"\nurl = "http://h/mcp"\n')
    assert error.code == "config_conflicting_transport"


def test_a_duplicate_server_name_is_rejected_naming_both_sources(tmp_path: Path) -> None:
    error = load_error(tmp_path, '[servers.a]\ncommand = "x"\n[mcpServers.a]\ncommand = "y"\n')
    assert error.code == "config_duplicate_server"
    assert "[servers]" in error.message and "[mcpServers]" in error.message


@pytest.mark.promise("P-NAME-1")
def test_server_names_that_collide_after_normalisation_are_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path, '[servers.my-server]\ncommand = "x"\n[servers.MyServer]\ncommand = "y"\n'
    )
    with pytest.raises(NameCollisionError) as caught:
        load_config(path, environ={})
    assert caught.value.code == "name_collision"
    assert "'my-server'" in caught.value.message and "'MyServer'" in caught.value.message


@pytest.mark.promise("P-NAME-1")
@pytest.mark.parametrize("name", ["discover", "status", "call", "Discover", "CALL"])
def test_a_server_named_like_a_proxy_tool_is_rejected(tmp_path: Path, name: str) -> None:
    error = load_error(tmp_path, f'[servers.{name}]\ncommand = "x"\n')
    assert error.code == "config_reserved_name"


def test_a_server_name_with_a_slash_is_rejected(tmp_path: Path) -> None:
    assert load_error(tmp_path, '[servers."a/b"]\ncommand = "x"\n').code == "config_bad_name"


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "absent.toml", environ={})
    assert caught.value.code == "config_missing"


def test_a_missing_imported_json_is_reported(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'mcp_json = ["nope.json"]\n')
    assert error.code == "config_missing"
    assert "nope.json" in error.message


def test_a_broken_imported_json_is_reported(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text("{not json")
    assert load_error(tmp_path, 'mcp_json = ["c.json"]\n').code == "config_mcp_json"


def test_toml_syntax_errors_are_reported(tmp_path: Path) -> None:
    assert load_error(tmp_path, "[servers.a\ncommand = \n").code == "config_toml"


@pytest.mark.promise("P-REL-5")
def test_an_oversized_config_is_rejected_before_parsing(tmp_path: Path) -> None:
    text = "# " + "x" * MAX_CONFIG_BYTES + "\n"
    assert load_error(tmp_path, text).code == "config_too_large"


def test_a_wrong_value_type_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, '[servers.a]\ncommand = "x"\nconnect_timeout = -1\n')
    assert error.code == "config_invalid"
    assert "connect_timeout" in error.message


@pytest.mark.promise("P-LOG-1")
def test_an_unset_variable_is_named_and_no_value_is_echoed(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        '[servers.a]\ncommand = "x"\nenv = { T = "${NOT_SET_ANYWHERE}", K = 5 }\n',
    )
    assert error.code == "config_env_var"
    assert "NOT_SET_ANYWHERE" in error.message


@pytest.mark.promise("P-LOG-1")
def test_a_bad_secret_value_is_not_echoed_in_the_error(tmp_path: Path) -> None:
    error = load_error(
        tmp_path, '[servers.a]\ncommand = "x"\nheaders = { A = ["hunter2-secret"] }\n'
    )
    assert error.code == "config_invalid"
    assert "hunter2-secret" not in error.message


def test_an_unknown_mcp_servers_type_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, '[mcpServers.a]\ntype = "carrier-pigeon"\nurl = "http://h/"\n')
    assert error.code == "config_invalid"


def test_unknown_defaults_key_is_rejected(tmp_path: Path) -> None:
    assert load_error(tmp_path, "[defaults]\ncommand = 'x'\n").code == "config_unknown_key"


def test_the_demo_federation_config_loads() -> None:
    demo = Path(__file__).resolve().parents[2] / "demo" / "cartograph.toml"
    config = load_config(demo, environ={})
    assert len(config.servers) >= 15
    assert all(s.cwd == demo.parent for s in config.servers if s.transport == "stdio")


# -- issue 13: values and documents that used to load silently wrong --------------------


@pytest.mark.promise("P-REL-1")
@pytest.mark.parametrize("value", ["inf", "+inf", "nan", "-5", "0", "1e12"])
def test_a_call_timeout_of_infinity_nan_or_below_zero_is_refused_at_load(
    tmp_path: Path, value: str
) -> None:
    for where in ("[servers.a]\ncommand = 'x'\n", "[defaults]\n"):
        body = f"{where}call_timeout = {value}\n"
        if where == "[defaults]\n":
            body += "[servers.a]\ncommand = 'x'\n"
        error = load_error(tmp_path, body)
        assert error.code == "config_invalid"
        assert "call_timeout" in error.message


@pytest.mark.promise("P-REL-1")
def test_an_infinite_breaker_cooldown_or_connect_timeout_is_refused(tmp_path: Path) -> None:
    assert load_error(tmp_path, "[gateway]\nbreaker_cooldown = inf\n").code == "config_invalid"
    body = "[servers.a]\ncommand = 'x'\nconnect_timeout = nan\n"
    assert load_error(tmp_path, body).code == "config_invalid"


@pytest.mark.promise("P-NAME-1")
def test_a_server_written_twice_in_imported_mcp_servers_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "client.json").write_text(
        '{"mcpServers": {"files": {"command": "a"}, "files": {"command": "b"}}}',
        encoding="utf-8",
    )
    error = load_error(tmp_path, 'mcp_json = "client.json"\n')
    assert error.code == "config_duplicate_key"
    assert "'files'" in error.message and "client.json" in error.message


@pytest.mark.promise("P-NAME-1")
def test_mcp_servers_and_vs_code_servers_in_one_json_file_are_refused_not_dropped(
    tmp_path: Path,
) -> None:
    (tmp_path / "client.json").write_text(
        json.dumps({"mcpServers": {"a": {"command": "a"}}, "servers": {"b": {"command": "b"}}}),
        encoding="utf-8",
    )
    error = load_error(tmp_path, 'mcp_json = "client.json"\n')
    assert error.code == "config_mcp_json_ambiguous"
    assert "'mcpServers'" in error.message and "'servers'" in error.message


def test_native_servers_and_inline_mcp_servers_in_toml_are_merged_explicitly(
    tmp_path: Path,
) -> None:
    config = load_config(
        write(tmp_path, '[servers.a]\ncommand = "a"\n[mcpServers.b]\ncommand = "b"\n'), environ={}
    )
    assert [s.name for s in config.servers] == ["a", "b"]
    clash = load_error(tmp_path, '[servers.a]\ncommand = "a"\n[mcpServers.a]\ncommand = "b"\n')
    assert clash.code == "config_duplicate_server"
