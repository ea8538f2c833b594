"""What an operator sees: catalogs chosen explicitly, typos answered, nothing cut or hidden."""

from __future__ import annotations

import io
import json
import logging
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.cli import output
from cartograph.cli.app import EXIT_CONFIG, EXIT_USAGE
from cartograph.cli.main import build_app
from tests.cli.support import CliError, cli_error
from tests.helpers.support import SCRIPTABLE

runner = CliRunner()

TWO_CATALOGS = f"""
state_dir = "state"

[index]
embedder = "fake"

[servers.time]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SCRIPTABLE))}]

[servers.memory]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SCRIPTABLE))}]

[[catalogs]]
name = "work"
servers = ["time"]

[[catalogs]]
name = "home"
servers = ["memory"]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cartograph.toml"
    path.write_text(text)
    return path


def _error(*args: str) -> CliError:
    result = runner.invoke(build_app(), list(args))
    error = cli_error(result)
    assert error is not None, result.output
    return error


@pytest.mark.parametrize(
    "command",
    [("serve",), ("status",), ("call", "time", "echo", '{"text": "x"}')],
    ids=["serve", "status", "call"],
)
def test_stdio_commands_with_two_catalogs_require_a_catalog_name_and_list_them(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    config = _write(tmp_path, TWO_CATALOGS)
    error = _error(*command, "--config", str(config))
    assert error.exit_code == EXIT_USAGE
    assert error.code == "catalog_name_required"
    assert "work" in error.message and "home" in error.message
    assert "--catalog-name" in error.message


def test_a_mistyped_catalog_name_gets_a_suggestion(tmp_path: Path) -> None:
    config = _write(tmp_path, TWO_CATALOGS)
    error = _error("status", "--config", str(config), "--catalog-name", "wrk")
    assert (error.exit_code, error.code) == (EXIT_USAGE, "unknown_catalog")
    assert "did you mean 'work'?" in error.message


def test_call_with_a_mistyped_server_suggests_the_close_name_before_starting_anything(
    tmp_path: Path,
) -> None:
    config = _write(tmp_path, TWO_CATALOGS)
    error = _error("call", "tme", "echo", "--config", str(config), "--catalog-name", "work")
    assert (error.exit_code, error.code) == (EXIT_USAGE, "unknown_server")
    assert "did you mean 'time'?" in error.message


def test_a_mistyped_config_key_gets_a_suggestion(tmp_path: Path) -> None:
    config = _write(tmp_path, '[servers.a]\ncomand = "x"\n\n[gateway]\nmode = "pooled"\n')
    error = _error("status", "--config", str(config))
    assert (error.exit_code, error.code) == (EXIT_CONFIG, "config_unknown_key")
    assert "did you mean 'command'?" in error.message
    config.write_text('[servers.a]\ncommand = "x"\n\n[gateway]\nmdoe = "pooled"\n')
    error = _error("status", "--config", str(config))
    assert "did you mean 'mode'?" in error.message


def test_did_you_mean_never_ends_in_an_empty_list() -> None:
    from cartograph.suggest import did_you_mean

    assert did_you_mean("tme", [], what="servers in it") == "there are no servers in it"
    assert did_you_mean("zzz", ["time", "memory"]) == "known: memory, time"
    assert did_you_mean("Tme", ["time", "memory"]) == "did you mean 'time'?"


def test_tables_are_not_truncated_when_stdout_is_not_a_terminal() -> None:
    assert not sys.stdout.isatty()  # pytest captures stdout
    long_name = "everything-server-with-a-long-name"
    description = "A description that goes on " * 8
    buffer = io.StringIO()
    output.stdout.file = buffer  # the console the CLI built for a captured (non-tty) stdout
    try:
        output.print_table(
            "t", ["server", "description", "metric"], [[long_name, description, 0.8125]]
        )
    finally:
        output.stdout.file = None  # type: ignore[assignment]  # rich: back to sys.stdout
    text = buffer.getvalue()
    assert long_name in text
    assert description.strip() in text
    assert "0.8125" in text
    assert "…" not in text


def test_third_party_debug_logging_stays_off_without_debug(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cartograph.cli.logs import setup_logging

    noisy = logging.getLogger("bm25s-like")
    noisy.setLevel(logging.DEBUG)  # what bm25s does to its own logger on import
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        setup_logging(False)
        noisy.debug("Building index from IDs")
        assert "Building index" not in capsys.readouterr().err
        setup_logging(True)
        noisy.debug("Building index from IDs")
        assert "Building index" in capsys.readouterr().err
    finally:
        root.handlers[:], root.level = saved[0], saved[1]


def test_servers_exits_non_zero_when_no_server_connected_and_shows_its_stderr(
    tmp_path: Path,
) -> None:
    script = tmp_path / "dies.py"
    script.write_text("import sys\nsys.stderr.write('fatal: missing API_KEY\\n')\nsys.exit(3)\n")
    config = _write(
        tmp_path,
        f"[servers.broken]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(script))}]\nconnect_timeout = 20\n",
    )
    result = runner.invoke(build_app(), ["servers", "--config", str(config)])
    assert result.exit_code == 1, result.output
    assert "fatal: missing API_KEY" in result.output


def test_serve_http_prints_the_url_it_listens_on(tmp_path: Path) -> None:
    import queue
    import subprocess
    import threading

    import httpx2

    config = _write(
        tmp_path,
        f'state_dir = "state"\n[index]\nembedder = "fake"\n[servers.time]\n'
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SCRIPTABLE))}]\n",
    )
    command = [sys.executable, "-m", "cartograph.cli.main", "serve", "--unsafe-throwaway-key"]
    process = subprocess.Popen(
        [*command, "--http", "--port", "0", "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    stream = process.stderr

    def read_lines() -> None:
        for line in stream:
            lines.put(line)

    reader = threading.Thread(target=read_lines, daemon=True)
    reader.start()
    try:
        line = ""
        while "serving on" not in line:
            line = lines.get(timeout=120)
        url = line.split("serving on ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        assert httpx2.get(f"{url}/health", timeout=10).status_code == 200
    finally:
        process.kill()
        process.wait(timeout=30)
        reader.join(timeout=30)
        process.stderr.close()


def test_status_shows_progress_on_a_terminal_and_nothing_when_redirected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    seen: list[str] = []

    class Recording(Console):
        def status(self, status: object, *args: object, **kwargs: object) -> object:  # type: ignore[override]
            seen.append(str(status))
            return super().status(status, *args, **kwargs)  # type: ignore[arg-type]

    config = _write(tmp_path, TWO_CATALOGS)
    args = ["status", "--config", str(config), "--catalog-name", "work", "--unsafe-throwaway-key"]
    monkeypatch.setattr(output, "stderr", Recording(file=io.StringIO(), force_terminal=True))
    assert runner.invoke(build_app(), args).exit_code == 0
    assert seen == ["connecting 1 servers of catalog work"]
    seen.clear()
    monkeypatch.setattr(output, "stderr", Recording(file=io.StringIO()))
    assert runner.invoke(build_app(), args).exit_code == 0
    assert seen == []
