"""Generated stubs call a real upstream through a real `cartograph serve`.

The operator flow, end to end: ``keys init`` → ``bootstrap`` (signed cards on
disk) → ``stubs`` (from those cards, drift-checked against the live server)
→ a script imports the package and calls it; each call goes to
``cartograph serve`` (a subprocess, over stdio or streamable HTTP) and on to
our own upstream MCP server (a subprocess too).
"""

from __future__ import annotations

import importlib
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx2
import pytest
from typer.testing import CliRunner

from cartograph.cli.main import build_app
from cartograph.errors import ArgumentError, CallError, ToolFailed, UpstreamUnavailable
from cartograph.stubs import runtime
from cartograph.stubs.targets import StdioTarget

UPSTREAM = Path(__file__).parents[1] / "helpers" / "scriptable.py"
PACKAGE = "e2e_stubs"
runner = CliRunner()


def _cli(*args: str) -> str:
    result = runner.invoke(build_app(), list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A config, signed cards and a generated package; yields the config path."""
    root = tmp_path_factory.mktemp("stubs-e2e")
    config = root / "cartograph.toml"
    python = json.dumps(sys.executable)
    config.write_text(
        f'state_dir = "state"\n\n[index]\nembedder = "fake"\n\n'
        f"[servers.stub-upstream]\ncommand = {python}\n"
        f'args = [{json.dumps(str(UPSTREAM))}, "--tools", "stubs"]\n'
        'protocol = "legacy"\n'
    )
    _cli("keys", "init", "--config", str(config))
    _cli("bootstrap", "--config", str(config))
    summary = json.loads(
        _cli(
            "stubs",
            "--config",
            str(config),
            "--out",
            str(root / "out"),
            "--package",
            PACKAGE,
            "--json",
        )
    )
    assert summary["cards"].startswith("signed cards in")
    assert [m["server"] for m in summary["modules"]] == ["stub-upstream"]
    sys.path.insert(0, str(root / "out"))
    try:
        yield config
    finally:
        sys.path.remove(str(root / "out"))
        for name in [n for n in sys.modules if n.split(".")[0] == PACKAGE]:
            del sys.modules[name]
        runtime.use(None)


def _stubs() -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.stub_upstream")


def _serve_command(config: Path, *extra: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "cartograph.cli.main", "serve", "--config", str(config), *extra)


@pytest.mark.slow
@pytest.mark.promise("P-TOOL-1")
def test_stub_calls_reach_the_upstream_through_serve_over_stdio(federation: Path) -> None:
    client = runtime.connect(command=_serve_command(federation))
    try:
        stubs = _stubs()
        assert stubs.add_numbers(2, 3) == {
            "sum": 5
        }  # structured content, checked against its schema
        assert stubs.greet("ada", from_="bob", style="shout").text == "HELLO ADA FROM BOB"
        # defaults are not sent, and keys go out under their upstream spelling
        assert json.loads(stubs.echo_args(first_key="x", limit=10).text) == {"first-key": "x"}
        with pytest.raises(ToolFailed) as failed:
            stubs.fail()
        assert failed.value.code == "tool_failed"
        with pytest.raises(ArgumentError) as bad:
            stubs.add_numbers("2", 3)
        assert bad.value.code == "bad_arguments"
        with pytest.raises(CallError) as refused:
            client.call("no-such-server", "x", {})
        assert refused.value.code == "unknown_server"
    finally:
        runtime.use(None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_stub_calls_reach_the_upstream_through_serve_over_http(federation: Path) -> None:
    port = _free_port()
    serve = subprocess.Popen(
        [*_serve_command(federation, "--http", "--port", str(port))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_healthy(f"http://127.0.0.1:{port}/health", serve)
        runtime.connect(url=f"http://127.0.0.1:{port}/mcp")
        assert _stubs().add_numbers(40, 2) == {"sum": 42}
    finally:
        runtime.use(None)
        serve.terminate()
        serve.wait(timeout=30)
        assert serve.stderr is not None
        serve.stderr.close()


def _wait_healthy(url: str, process: subprocess.Popen[bytes], attempts: int = 120) -> None:
    """Poll /health (bounded): serve needs a few seconds to connect and index."""
    for _ in range(attempts):
        if process.poll() is not None:
            raise AssertionError(f"serve exited with {process.returncode}")
        try:
            if httpx2.get(url, timeout=1.0).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        try:
            process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            continue
    raise AssertionError(f"{url} never became healthy")


@pytest.mark.promise("P-TOOL-1")
def test_invalid_arguments_fail_before_any_connection_is_attempted(federation: Path) -> None:
    runtime.use(runtime.StubClient(StdioTarget(("/nonexistent/cartograph-serve",))))
    try:
        stubs = _stubs()
        with pytest.raises(ArgumentError) as bad:
            stubs.add_numbers(1, "not a number")
        assert bad.value.code == "bad_arguments"
        with pytest.raises(UpstreamUnavailable) as down:  # the valid call does try to connect
            stubs.add_numbers(1, 2)
        assert down.value.code == "serve_unavailable"
    finally:
        runtime.use(None)
