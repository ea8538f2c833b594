"""Rough edges a new user hit on a first run (issue 25 item 5), each pinned in-process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cartograph.cli.app import EXIT_CHECK_FAILED, EXIT_USAGE
from cartograph.cli.main import build_app
from tests.cli.support import cli_error
from tests.helpers.support import SCRIPTABLE

runner = CliRunner()

DIES = (
    "import os, sys\nsys.stderr.write('fatal: bad key ' + os.environ['API_KEY'] + '\\n')\n"
    "sys.exit(3)\n"
)


def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CARTOGRAPH_CONFIG", raising=False)
    return runner.invoke(build_app(), list(args))


def one_good_one_dying(tmp_path: Path) -> Path:
    """``time`` (the scriptable server) and ``broken``, which prints its secret and exits."""
    script = tmp_path / "dies.py"
    script.write_text(DIES)
    config = tmp_path / "cartograph.toml"
    config.write_text(
        f'state_dir = "state"\n\n[servers.time]\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{json.dumps(str(SCRIPTABLE))}]\nconnect_timeout = 30\n\n"
        f"[servers.broken]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(script))}]\nconnect_timeout = 30\n"
        'env = { API_KEY = "sk-hunter2-secret" }\n'
    )
    return config


def test_bootstrap_with_a_failed_server_exits_1_and_shows_its_redacted_stderr_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = one_good_one_dying(tmp_path)
    assert invoke(tmp_path, monkeypatch, "keys", "init", "--config", str(config)).exit_code == 0
    result = invoke(tmp_path, monkeypatch, "bootstrap", "--config", str(config), "--json")
    assert result.exit_code == EXIT_CHECK_FAILED, result.output
    outcomes = {s["server"]: s["outcome"] for s in json.loads(result.stdout)["servers"]}
    assert outcomes == {"time": "written", "broken": "failed"}
    assert "fatal: bad key ***" in result.stderr
    assert "sk-hunter2-secret" not in result.output


def test_snapshot_into_a_missing_folder_is_refused_naming_it_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"servers": [{"name": "s", "tools": [{"name": "t"}]}]}))
    out = tmp_path / "missing" / "dir" / "catalog.json"
    result = invoke(tmp_path, monkeypatch, "snapshot", "--catalog", str(catalog), "--out", str(out))
    error = cli_error(result)
    assert error is not None, result.output
    assert (error.exit_code, error.code) == (EXIT_USAGE, "out_dir_missing")
    assert str(out.parent) in error.message
    assert not (tmp_path / "missing").exists()


POLICY = """
[servers.time]
command = "/nonexistent/never-started"

[[catalogs]]
name = "main"

[catalogs.policy]
deny = ["time/secret"]
"""


def two_tool_snapshot(tmp_path: Path) -> tuple[Path, Path]:
    """A config denying ``time/secret``, and a snapshot serving ``time/echo`` and it."""
    snapshot = tmp_path / "catalog.json"
    tools = [{"name": "echo", "description": "e"}, {"name": "secret", "description": "s"}]
    snapshot.write_text(json.dumps({"servers": [{"name": "time", "tools": tools}]}))
    config = tmp_path / "cartograph.toml"
    config.write_text(POLICY)
    return config, snapshot


def test_tools_marks_policy_denied_tools_in_the_table_and_in_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, snapshot = two_tool_snapshot(tmp_path)
    args = ["tools", "--config", str(config), "--catalog", str(snapshot)]
    result = invoke(tmp_path, monkeypatch, *args, "--json")
    assert result.exit_code == 0, result.output
    assert {t["name"]: t["denied_in"] for t in json.loads(result.stdout)} == {
        "echo": [],
        "secret": ["main"],
    }
    table = invoke(tmp_path, monkeypatch, *args).stdout
    (secret,) = [line for line in table.splitlines() if "secret" in line]
    (echo,) = [line for line in table.splitlines() if " echo " in line]
    assert "policy-denied" in secret and "policy-denied" not in echo


def test_tools_with_a_mistyped_server_suggests_the_closest_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, snapshot = two_tool_snapshot(tmp_path)
    for extra in ((), ("--catalog", str(snapshot))):  # live (nothing started) and a snapshot
        result = invoke(
            tmp_path, monkeypatch, "tools", "--config", str(config), "-s", "tme", *extra
        )
        error = cli_error(result)
        assert error is not None, result.output
        assert (error.exit_code, error.code) == (EXIT_USAGE, "unknown_server")
        assert "did you mean 'time'?" in error.message


def test_cards_show_of_an_unconfigured_name_says_so_and_suggests_the_configured_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = two_tool_snapshot(tmp_path)
    error = cli_error(
        invoke(tmp_path, monkeypatch, "cards", "show", "tme", "--config", str(config))
    )
    assert error is not None
    assert (error.exit_code, error.code) == (EXIT_USAGE, "unknown_server")
    assert "not a configured server" in error.message and "did you mean 'time'?" in error.message
    assert "bootstrap" not in error.message
    error = cli_error(
        invoke(tmp_path, monkeypatch, "cards", "show", "time", "--config", str(config))
    )
    assert error is not None and error.code == "card_missing"
    assert "cartograph bootstrap --server time" in error.message


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("servers", "--config", "x.toml", "--json"), "config_missing"),
        (("cards", "show", "tme", "--json"), "unknown_server"),
        (("tools", "--json", "--bogus"), "usage"),
    ],
    ids=["config-error", "nested-command", "usage-error"],
)
def test_with_json_a_commands_closing_error_is_one_json_object_with_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], code: str
) -> None:
    result = invoke(tmp_path, monkeypatch, *args)
    assert result.exit_code != 0
    (line,) = result.stderr.strip().splitlines()
    error = json.loads(line)
    assert (error["level"], error["code"]) == ("ERROR", code)
    assert error["message"]
    assert result.stdout == ""


def test_a_json_token_after_a_double_dash_is_an_argument_not_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(tmp_path, monkeypatch, "servers", "--config", "x.toml", "--", "--json")
    assert not result.stderr.startswith("{")


def test_version_prints_json_with_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cartograph import __version__

    result = invoke(tmp_path, monkeypatch, "version", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"version": __version__}


def test_connect_with_json_reports_what_it_wrote_and_a_dry_run_its_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(POLICY)
    target = tmp_path / "mcp.json"
    args = ["connect", "--client", "cursor", "--config", str(config), "--target", str(target)]
    dry = invoke(tmp_path, monkeypatch, *args, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    (diff,) = json.loads(dry.stdout)["diffs"].values()
    assert '"cartograph"' in diff and not target.exists()
    result = invoke(tmp_path, monkeypatch, *args, "--json")
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert (done["client"], done["entries"], done["path"]) == (
        "cursor",
        ["cartograph"],
        str(target),
    )
    assert done["removed_stale"] == [] and done["server_shape"] is None


def test_flags_show_no_type_label_in_rich_help_and_valued_options_keep_theirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer import rich_utils

    monkeypatch.setattr(rich_utils, "MAX_WIDTH", 200)  # one line per option
    app_module = sys.modules["cartograph.cli.app"]  # the package's `app` is the Typer app
    monkeypatch.setattr(app_module, "_stdout_is_terminal", lambda: True)  # rich help
    result = invoke(tmp_path, monkeypatch, "eval", "--help")
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if "│    --" in line}
    assert "<bool>" not in result.stdout, result.stdout
    assert "--no-raw" in lines and "<int>" in lines["--seed"]


@pytest.mark.parametrize(
    "args",
    [("eval", "--help"), ("cards", "show", "--help"), (), ("cards",)],
    ids=["command", "nested-command", "no-arguments", "group-without-command"],
)
def test_piped_help_starts_with_its_usage_line_and_pads_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    result = invoke(tmp_path, monkeypatch, *args)  # CliRunner's stdout is not a terminal
    assert result.stdout.startswith("Usage: cartograph"), repr(result.stdout[:200])
    assert all(line == line.rstrip() for line in result.stdout.splitlines())
    assert result.exit_code == (0 if args[-1:] == ("--help",) else EXIT_USAGE)


def test_doctor_names_the_client_file_of_each_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(POLICY)
    files = [tmp_path / "project" / ".mcp.json", tmp_path / "user" / ".claude.json"]
    for target in files:  # claude-code connected twice: a project file and the user file
        target.parent.mkdir()
        args = ["connect", "--client", "claude-code", "--config", str(config)]
        assert invoke(tmp_path, monkeypatch, *args, "--target", str(target)).exit_code == 0
    found = json.loads(invoke(tmp_path, monkeypatch, "doctor", "--json").stdout)
    assert sorted((f["client"], f["file"]) for f in found) == [
        ("claude-code", str(files[0])),
        ("claude-code", str(files[1])),
    ]
    table = invoke(tmp_path, monkeypatch, "doctor").stdout
    assert str(files[0]) in table and str(files[1]) in table


def test_adopt_takes_the_comments_of_each_server_it_moves_out_of_the_client_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / ".cursor" / "mcp.json"
    target.parent.mkdir()
    calc = f'{{"command": {json.dumps(sys.executable)}, "args": [{json.dumps(str(SCRIPTABLE))}]}}'
    target.write_text(
        '{\n  // my servers\n  "mcpServers": {\n'
        f'    // calc: the calculator\n    "calc": {calc}, // added in May\n'
        f'    "memory": {calc} // the last one\n  }}\n}}\n'
    )
    config = tmp_path / "cartograph.toml"
    config.write_text('state_dir = "state"\n')
    args = ["connect", "--client", "cursor", "--config", str(config), "--adopt"]
    result = invoke(tmp_path, monkeypatch, *args)
    assert result.exit_code == 0, result.output
    text = target.read_text()
    assert "// my servers" in text  # the file's own comment stays
    for moved in ("calc: the calculator", "added in May", "the last one"):
        assert moved not in text, text


def test_removing_an_entry_keeps_a_block_comment_that_does_not_close_on_its_line() -> None:
    from cartograph.config import jsonc

    text = '{\n  "s": {\n    "a": 1, /* about\n    b */\n    "b": 2\n  }\n}\n'
    removed = jsonc.remove_entry(text, "s", "a")
    assert jsonc.loads(removed, where="t") == {"s": {"b": 2}}
    assert "/* about" in removed


def vscode_project(tmp_path: Path, env_file: str) -> Path:
    """A VS Code ``.vscode/mcp.json`` whose ``calc`` reads ``env_file``; the config imports it."""
    vscode = tmp_path / ".vscode"
    vscode.mkdir()
    entry = {"command": sys.executable, "args": [str(SCRIPTABLE)], "envFile": env_file}
    (vscode / "mcp.json").write_text(json.dumps({"servers": {"calc": entry}}))
    config = tmp_path / "cartograph.toml"
    config.write_text('state_dir = "state"\nmcp_json = ".vscode/mcp.json"\n')
    return config


def test_a_vscode_env_file_reaches_the_imported_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("# tools\nexport SCRIPTABLE_EXTRA_TOOL='from-env-file'\n")
    config = vscode_project(tmp_path, "${workspaceFolder}/.env")
    result = invoke(tmp_path, monkeypatch, "tools", "--config", str(config), "--json")
    assert result.exit_code == 0, result.output
    assert "from-env-file" in {t["name"] for t in json.loads(result.stdout)}


def test_a_missing_env_file_refuses_that_server_with_a_code_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    config = vscode_project(tmp_path, "${workspaceFolder}/missing.env")
    result = invoke(tmp_path, monkeypatch, "servers", "--config", str(config), "--json")
    assert json.loads(result.stdout)["servers"] == []  # calc alone was in the file
    (message,) = [r.getMessage() for r in caplog.records if "not imported" in r.getMessage()]
    assert "'calc'" in message and "config_env_file" in message
    assert str(tmp_path / "missing.env") in message


def test_adopt_keeps_a_relative_env_file_pointing_at_the_client_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / ".cursor" / "mcp.json"
    target.parent.mkdir()
    (target.parent / "calc.env").write_text("SCRIPTABLE_EXTRA_TOOL=from-env-file\n")
    entry = {"command": sys.executable, "args": [str(SCRIPTABLE)], "envFile": "calc.env"}
    target.write_text(json.dumps({"mcpServers": {"calc": entry}}))
    config = tmp_path / "cartograph.toml"
    config.write_text('state_dir = "state"\n')
    args = ["connect", "--client", "cursor", "--config", str(config), "--adopt"]
    assert invoke(tmp_path, monkeypatch, *args).exit_code == 0
    result = invoke(tmp_path, monkeypatch, "tools", "--config", str(config), "--json")
    assert result.exit_code == 0, result.output
    assert "from-env-file" in {t["name"] for t in json.loads(result.stdout)}


def test_an_unfillable_variable_refuses_that_imported_server_only_with_a_hint_in_its_syntax(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("CARTOGRAPH_TEST_UNSET", raising=False)
    calc = {"command": sys.executable, "args": [str(SCRIPTABLE)]}
    servers = {
        "calc": calc,
        "needs_token": {**calc, "env": {"TOKEN": "${env:CARTOGRAPH_TEST_UNSET}"}},
        "prompted": {**calc, "env": {"KEY": "${input:api-key}"}},
    }
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "mcp.json").write_text(json.dumps({"servers": servers}))
    config = tmp_path / "cartograph.toml"
    config.write_text('state_dir = "state"\nmcp_json = ".vscode/mcp.json"\n')
    result = invoke(tmp_path, monkeypatch, "tools", "--config", str(config), "--json")
    assert result.exit_code == 0, result.output
    assert {t["server"] for t in json.loads(result.stdout)} == {"calc"}
    refused = {r.getMessage().split("'")[1]: r.getMessage() for r in caplog.records}
    assert set(refused) == {"needs_token", "prompted"}
    assert "config_env_var" in refused["needs_token"]
    assert "where Cartograph runs" in refused["needs_token"]
    assert ":-default" not in refused["needs_token"]  # Cursor and VS Code have no such form
    assert "config_input_variable" in refused["prompted"] and "api-key" in refused["prompted"]


def test_adopt_leaves_a_server_with_a_vscode_input_in_the_client_file_and_moves_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calc = {"command": sys.executable, "args": [str(SCRIPTABLE)]}
    servers = {"calc": calc, "prompted": {**calc, "env": {"KEY": "${input:api-key}"}}}
    target = tmp_path / ".vscode" / "mcp.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"servers": servers}))
    config = tmp_path / "cartograph.toml"
    config.write_text('state_dir = "state"\n')
    args = ["connect", "--client", "vscode", "--config", str(config), "--adopt"]
    result = invoke(tmp_path, monkeypatch, *args, "--json")
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert done["adopted"] == ["calc"] and list(done["kept"]) == ["prompted"]
    assert "api-key" in done["kept"]["prompted"]
    assert set(json.loads(target.read_text())["servers"]) == {"cartograph", "prompted"}
    assert "calc" in config.read_text() and "prompted" not in config.read_text()
