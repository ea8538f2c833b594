"""Errors become one stderr line and a family's exit code inside the app, as docs/errors.md says.

Everything here runs in-process (``CliRunner``): the mapping lives in the Typer app itself,
so what these see is what a shell sees.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cartograph import errors
from cartograph.cli.app import (
    EXIT_CARDS,
    EXIT_CODES,
    EXIT_CONFIG,
    EXIT_OTHER,
    EXIT_UPSTREAM,
    EXIT_USAGE,
    exit_code_for,
)
from cartograph.cli.main import build_app
from cartograph.errors import CartographError
from tests.cli.support import error_code

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
runner = CliRunner()

ERROR_CLASSES = [
    cls
    for cls in vars(errors).values()
    if inspect.isclass(cls) and issubclass(cls, CartographError)
]


def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(tmp_path)  # no ./cartograph.toml: commands that can run on defaults do
    monkeypatch.delenv("CARTOGRAPH_CONFIG", raising=False)
    return runner.invoke(build_app(), list(args))


def one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def test_inconsistent_rift_bands_are_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(tmp_path, monkeypatch, "rift", "--high", "0.5", "--medium", "0.1")
    assert result.exit_code == EXIT_USAGE
    assert error_code(result) == "bad_option"
    assert "0.5" in one_error_line(result)


@pytest.mark.parametrize(
    ("flag", "value"), [("--theta", "2"), ("--tau", "0"), ("--jaccard", "1"), ("--high", "x")]
)
def test_an_out_of_range_rift_option_names_its_flag_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, value: str
) -> None:
    result = invoke(tmp_path, monkeypatch, "rift", flag, value)
    assert result.exit_code == EXIT_USAGE
    assert flag in one_error_line(result)


def test_update_baseline_without_a_baseline_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.json"  # would be a catalog_unreadable error if read first
    result = invoke(tmp_path, monkeypatch, "rift", "--catalog", str(missing), "--update-baseline")
    assert result.exit_code == EXIT_USAGE
    assert error_code(result) == "bad_option"


def test_a_click_usage_error_is_one_line_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(tmp_path, monkeypatch, "rift", "--bogus")
    assert result.exit_code == EXIT_USAGE
    line = one_error_line(result)
    assert line.startswith("error (usage): ") and "--bogus" in line


@pytest.mark.parametrize(
    "args",
    [
        ("serve", "--http", "--port", "70000"),
        ("discover", "a task", "-k", "0"),
        ("stubs", "--out", "x", "-k", "0"),
        ("eval", "--learning", "--limit", "0"),
    ],
    ids=["port", "discover-k", "stubs-k", "eval-limit"],
)
def test_an_out_of_range_number_is_refused_on_one_line_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    result = invoke(tmp_path, monkeypatch, *args)
    assert result.exit_code == EXIT_USAGE
    line = one_error_line(result)
    assert line.startswith("error (usage): ") and args[-2] in line


def test_a_config_error_exits_3_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = invoke(tmp_path, monkeypatch, "servers", "--config", str(tmp_path / "none.toml"))
    assert result.exit_code == EXIT_CONFIG
    assert error_code(result) == "config_missing"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_catalog_error_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    result = invoke(tmp_path, monkeypatch, "rift", "--catalog", str(tmp_path / "bad.json"))
    assert result.exit_code == EXIT_CONFIG
    assert error_code(result) == "catalog_json"


def test_no_arguments_still_prints_help(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = invoke(tmp_path, monkeypatch)
    assert "Usage" in result.output and "error (" not in result.output


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (errors.OptionError("m"), EXIT_USAGE),
        (errors.ConfigError("m"), EXIT_CONFIG),
        (errors.CatalogError("m"), EXIT_CONFIG),
        (errors.NameCollisionError("m"), EXIT_CONFIG),
        (errors.SignatureError("m"), EXIT_CARDS),
        (errors.DriftError("m"), EXIT_CARDS),
        (errors.CircuitOpen("m"), EXIT_UPSTREAM),
        (errors.ToolFailed("m"), EXIT_UPSTREAM),
        (errors.PolicyError("m"), EXIT_OTHER),
        (errors.SessionLimitError("m"), EXIT_OTHER),
        (CartographError("m"), EXIT_OTHER),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_each_error_family_has_its_exit_code(error: CartographError, expected: int) -> None:
    assert exit_code_for(error) == expected


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_no_cartograph_error_shares_clicks_usage_exit_code_except_option_errors(
    cls: type[CartographError],
) -> None:
    code = exit_code_for(cls("m"))
    assert code != 0 and code != 1
    assert (code == EXIT_USAGE) == issubclass(cls, errors.OptionError)


def documented_exit_codes() -> dict[str, int]:
    """Class name → exit code, from the "raised as" column of docs/errors.md's table."""
    text = DOC.read_text(encoding="utf-8").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    found: dict[str, int] = {}
    for exit_code, classes in re.findall(r"^\| (\d) \|.*\| ([^|]*) \|$", text, re.M):
        for name in re.findall(r"`(\w+)`", classes):
            found[name] = int(exit_code)
    return found


def test_the_docs_exit_code_table_matches_the_app() -> None:
    assert documented_exit_codes() == {family.__name__: code for family, code in EXIT_CODES}


@pytest.mark.parametrize(
    "args",
    [("discover", "a task"), ("eval",), ("eval", "--learning"), ("rift",)],
    ids=["discover", "eval", "eval-learning", "rift"],
)
def test_a_mistyped_embedder_is_a_usage_error_naming_the_close_one_and_every_known_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    result = invoke(tmp_path, monkeypatch, *args, "--embedder", "minlm")
    assert result.exit_code == EXIT_USAGE
    line = one_error_line(result)
    assert error_code(result) == "unknown_embedder"
    assert "--embedder" in line and "did you mean 'minilm'?" in line
    assert "known embedders: fake, minilm" in line


@pytest.mark.parametrize("args", [("discover", "a task"), ("eval",)], ids=["discover", "eval"])
def test_a_mistyped_ranker_is_a_usage_error_naming_the_close_one_and_every_known_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    result = invoke(tmp_path, monkeypatch, *args, "-m", "hybird")
    assert result.exit_code == EXIT_USAGE
    line = one_error_line(result)
    assert error_code(result) == "unknown_ranker"
    assert "--method" in line and "did you mean 'hybrid'?" in line
    assert "known rankers: hybrid, two-stage, dense, bm25, jaccard, random" in line
