"""Bad config through the real entry point: one clean line on stderr, exit 3, no traceback.

The loader tests assert codes; these assert what an operator actually sees,
including text the terminal renderer could mangle (``[servers]`` looks like
rich markup).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cartograph.cli.app import EXIT_CONFIG
from cartograph.cli.main import main

# (case id, config text, error code, fragments the one-line message must contain)
CASES: list[tuple[str, str, str, list[str]]] = [
    (
        "unknown_key",
        '[servers.a]\ncommand = "x"\nbogus = 1\n',
        "config_unknown_key",
        ["'a'", "'bogus'"],
    ),
    (
        "unknown_defaults_key",
        "[defaults]\nbogus = 1\n",
        "config_unknown_key",
        ["[defaults]", "'bogus'"],
    ),
    (
        "missing_command",
        '[servers.a]\nargs = ["x"]\n',
        "config_missing_command",
        ["'a'", "'command'"],
    ),
    ("bad_url", '[servers.a]\nurl = "ftp://x"\n', "config_bad_url", ["'a'", "'url'"]),
    (
        "duplicate_server",
        '[servers.a]\ncommand = "x"\n[mcpServers.a]\ncommand = "y"\n',
        "config_duplicate_server",
        ["[servers]", "[mcpServers]"],
    ),
    (
        "collision_after_normalisation",
        '[servers.my-server]\ncommand = "x"\n[servers.my_server]\ncommand = "y"\n',
        "name_collision",
        ["'my-server'", "'my_server'", "[servers]"],
    ),
    (
        "reserved_name",
        '[servers.discover]\ncommand = "x"\n',
        "config_reserved_name",
        ["'discover'"],
    ),
    ("toml_syntax", '[servers.a\ncommand = "x"\n', "config_toml", ["line 1"]),
    (
        "unset_variable",
        '[servers.a]\ncommand = "${CARTOGRAPH_TEST_UNSET}"\n',
        "config_env_var",
        ["'command'"],
    ),
    (
        "wrong_type",
        '[servers.a]\ncommand = "x"\nconnect_timeout = "soon"\n',
        "config_invalid",
        ["'connect_timeout'"],
    ),
    ("bad_catalog", '[[catalogs]]\nname = "Bad Name"\n', "bad_catalog_name", ["'Bad Name'"]),
    ("missing_import", 'mcp_json = "absent.json"\n', "config_missing", ["absent.json"]),
]


@pytest.mark.parametrize(
    ("text", "code", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_config_prints_one_line_naming_file_and_key_and_exits_3(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    code: str,
    fragments: list[str],
) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(text)
    monkeypatch.delenv("CARTOGRAPH_TEST_UNSET", raising=False)
    # Without --json: that makes the line a JSON object (test_json_errors_carry_the_same_code).
    monkeypatch.setattr("sys.argv", ["cartograph", "servers", "--config", str(config)])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    assert exited.value.code == EXIT_CONFIG
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"error ({code}): "), lines[0]
    assert "Traceback" not in captured.err
    assert str(tmp_path) in lines[0]
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize(("text", "code"), [c[1:3] for c in CASES], ids=[c[0] for c in CASES])
def test_json_errors_carry_the_same_code(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    code: str,
) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(text)
    monkeypatch.delenv("CARTOGRAPH_TEST_UNSET", raising=False)
    monkeypatch.setattr("sys.argv", ["cartograph", "servers", "--config", str(config), "--json"])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    assert exited.value.code == EXIT_CONFIG
    (line,) = captured.err.strip().splitlines()
    assert json.loads(line)["code"] == code
