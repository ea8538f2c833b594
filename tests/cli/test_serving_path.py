"""`discover`, `call` and `status` on the command line take the serving path.

They use the operator's signed cards, trust set and embedding cache exactly
as `serve` does; a throwaway key only with --unsafe-throwaway-key, and it says so;
nothing to serve is an error naming the command that fixes it (issue 12).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.cli.app import EXIT_CARDS, EXIT_CONFIG
from cartograph.cli.main import build_app
from tests.cli.support import error_code
from tests.helpers.support import scriptable, toml_for

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str, str | None]:
    result = runner.invoke(build_app(), list(args))
    return result.exit_code, result.stdout, result.stderr, error_code(result)


def write(tmp_path: Path, *, command_works: bool = True) -> Path:
    calc = scriptable("calc")
    if not command_works:
        calc = calc.model_copy(update={"command": str(tmp_path / "no-such-program")})
    config = tmp_path / "cartograph.toml"
    config.write_text(toml_for(tmp_path / "state", calc))
    return config


@pytest.fixture
def bootstrapped(tmp_path: Path) -> Path:
    config = write(tmp_path)
    for command in (("keys", "init"), ("bootstrap",)):
        code, _, err, exc = run(*command, "--config", str(config))
        assert code == 0, (err, exc)
    return config


def test_discover_ranks_the_operators_cards_without_connecting_upstream(
    bootstrapped: Path, tmp_path: Path
) -> None:
    write(tmp_path, command_works=False)  # the upstream cannot start: only cards can answer

    code, out, err, exc = run(
        "discover", "add two integers", "--config", str(bootstrapped), "--json"
    )

    assert code == 0, (err, exc)
    found = json.loads(out)
    assert found["attestation"] == "operator"
    assert found["tools"][0]["tool"] == "add"
    assert "throwaway" not in err


def test_discover_fills_then_reuses_the_embedding_cache_and_persisted_index(
    bootstrapped: Path,
) -> None:
    state = bootstrapped.parent / "state"
    run("discover", "add two integers", "--config", str(bootstrapped))
    segments = sorted(p.name for p in (state / "embeddings").rglob("seg-*.bin"))
    blocks = {p: p.stat().st_mtime_ns for p in (state / "index").rglob("*.npy")}

    code, _, _, _ = run("discover", "echo some text", "--config", str(bootstrapped))

    assert code == 0 and segments and blocks
    assert sorted(p.name for p in (state / "embeddings").rglob("seg-*.bin")) == segments
    assert {p: p.stat().st_mtime_ns for p in (state / "index").rglob("*.npy")} == blocks


def test_unsafe_throwaway_key_says_the_cards_are_unsigned_throwaway_ones(tmp_path: Path) -> None:
    config = write(tmp_path)

    code, out, err, exc = run(
        "discover", "add two integers", "--config", str(config), "--unsafe-throwaway-key", "--json"
    )

    assert code == 0, (err, exc)
    assert "unsigned" in err and "throwaway" in err
    assert "throwaway" in json.loads(out)["attestation"]


@pytest.mark.parametrize("command", [("discover", "add"), ("status",), ("call", "calc", "add")])
def test_without_a_trusted_key_every_command_names_keys_init(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    code, out, err, exc = run(*command, "--config", str(write(tmp_path)))

    assert code == EXIT_CARDS and exc == "no_trust"
    assert "cartograph keys init" in err
    assert out == ""  # never an empty table


@pytest.mark.parametrize("command", [("discover", "add"), ("status",), ("call", "calc", "add")])
def test_without_cards_every_command_names_bootstrap(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    config = write(tmp_path)
    run("keys", "init", "--config", str(config))

    code, out, err, exc = run(*command, "--config", str(config))

    assert code == EXIT_CARDS and exc == "no_cards"
    assert "cartograph bootstrap" in err
    assert out == ""


def test_a_config_naming_no_server_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n')

    code, out, err, exc = run("discover", "add two integers", "--config", str(config))

    assert code == EXIT_CONFIG and exc == "no_servers"
    assert "cartograph bootstrap" in err and out == ""


def test_status_by_default_prints_totals_and_problems_and_detail_every_server(
    bootstrapped: Path,
) -> None:
    code, out, err, exc = run("status", "--config", str(bootstrapped), "--json")
    assert code == 0, (err, exc)
    compact = json.loads(out)
    assert compact["problems"] == [] and "servers" not in compact

    code, out, _, _ = run("status", "--config", str(bootstrapped), "--json", "--detail")
    assert [s["name"] for s in json.loads(out)["servers"]] == ["calc"]


def test_cards_none_of_which_verify_are_an_error_naming_cards_verify(bootstrapped: Path) -> None:
    card = next((bootstrapped.parent / "state" / "cards").glob("*.card.json"))
    card.write_text(card.read_text().replace("Add two integers", "Add two integers!"))

    code, out, err, exc = run("discover", "add two integers", "--config", str(bootstrapped))

    assert code == EXIT_CARDS and exc == "no_verified_cards"
    assert "cartograph cards verify" in err and out == ""


def test_a_discover_from_the_persisted_index_imports_no_build_only_module(
    bootstrapped: Path,
) -> None:
    # bm25s (scipy, numpy.f2py), numpy.ma (np.unique) and jsonschema only build an
    # index or check a call: ~0.5 s of CPU a restarted discover never needs.
    run("discover", "add two integers", "--config", str(bootstrapped))  # persists the index
    probe = (
        "import json, sys\n"
        "from cartograph.cli.main import main\n"
        f"sys.argv = ['cartograph', 'discover', 'add', '--config', {str(bootstrapped)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('bm25s', 'scipy', 'jsonschema', 'numpy.ma', 'numpy.f2py')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []
