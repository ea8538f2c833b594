"""`cartograph run`, in process: a program file or --code against a real upstream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.cli.main import build_app
from tests.codemode.support import notes
from tests.helpers.support import toml_for

runner = CliRunner()
PROGRAM = (
    "names = (await notes.list_notes())['notes']\n"
    "print('found', len(names))\n"
    "{n: len((await notes.read_note(n)).split()) for n in names}\n"
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "cartograph.toml"
    audit = tmp_path / "audit.jsonl"
    path.write_text(toml_for(tmp_path / "state", notes(), audit_log=str(audit)))
    return path


def cartograph_run(config: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(
        build_app(), ["run", *args, "--config", str(config), "--unsafe-throwaway-key"]
    )
    return result.exit_code, result.stdout, result.stderr


def test_a_program_file_prints_its_output_and_value_and_audits_each_call(
    config: Path, tmp_path: Path
) -> None:
    program = tmp_path / "count.py"
    program.write_text(PROGRAM)
    status, out, err = cartograph_run(config, str(program))
    assert status == 0, err
    assert out == 'found 3\n{"alpha": 3, "beta": 2, "gamma": 1}\n'
    assert "code mode is off for catalog 'default'" in err
    run_id = err.split("\nrun ", 1)[1].split()[0]
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    of_run = [(r["proxy_tool"], r.get("tool")) for r in records if run_id in r.get("trace", "")]
    assert of_run == [("call", "list_notes")] + [("call", "read_note")] * 3 + [("run", None)]


def test_code_and_inputs_from_the_command_line_with_json_output(config: Path) -> None:
    status, out, _ = cartograph_run(
        config, "--code", "inputs['x'] * 2", "--inputs", '{"x": 21}', "--json"
    )
    assert status == 0
    assert json.loads(out)["value"] == 42


def test_a_failed_run_exits_1_with_its_code(config: Path) -> None:
    status, _, err = cartograph_run(config, "--code", "import os\nos.listdir('/')")
    assert status == 1
    assert "error (code_forbidden): PermissionError" in err


@pytest.mark.parametrize("args", [(), ("prog.py", "--code", "1")])
def test_exactly_one_program_is_required(config: Path, args: tuple[str, ...]) -> None:
    status, _, err = cartograph_run(config, *args)
    assert status == 2
    assert "bad_option" in err
