"""A CLI that starts fast: building the command tree imports no heavy module.

`cartograph --help` and `cartograph version` build every command group; each
command imports what it needs when it runs. Speed itself is measured by
``benchmarks/first_answer.py``; this pins the cause (what gets imported).
"""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from cartograph.cli.main import build_app

HEAVY = ("mcp", "pydantic", "numpy", "onnxruntime", "httpx2", "bm25s", "rich.progress")


def _modules_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_building_the_command_tree_imports_no_heavy_module() -> None:
    loaded = set(_modules_after("from cartograph.cli.main import build_app; build_app()"))
    assert [m for m in HEAVY if m in loaded] == []


def test_help_lists_every_command_group_without_importing_heavy_modules() -> None:
    code = (
        "import contextlib, io\n"
        "from cartograph.cli.main import build_app\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    build_app()(['--help'])"
    )
    assert [m for m in HEAVY if m in set(_modules_after(code))] == []
    result = CliRunner().invoke(build_app(), ["--help"])
    assert result.exit_code == 0
    for command in ("serve", "discover", "status", "call", "bootstrap", "keys", "cards", "stubs"):
        assert command in result.output


def test_the_stubs_default_package_written_in_the_cli_is_the_generators() -> None:
    from cartograph.cli.stubs import DEFAULT_PACKAGE as CLI_DEFAULT
    from cartograph.stubs.generate import DEFAULT_PACKAGE

    assert CLI_DEFAULT == DEFAULT_PACKAGE


def test_loading_a_config_does_not_import_the_mcp_sdk() -> None:
    loaded = set(_modules_after("import cartograph.config.loader"))
    assert "mcp" not in loaded


def test_the_upstream_package_still_exports_its_names_on_first_use() -> None:
    import cartograph.upstream as upstream
    from cartograph.upstream.federation import connect_federation
    from cartograph.upstream.session import UpstreamSession

    assert upstream.connect_federation is connect_federation
    assert upstream.UpstreamSession is UpstreamSession


def test_the_first_discover_imports_nothing_only_building_or_calling_needs() -> None:
    # What `serve` (stdio) and the CLI's discover import before their first
    # answer: bm25s (scipy.sparse, numpy.f2py behind it) only builds a lexical
    # index, jsonschema only checks a call's arguments or writes a card.
    for code in (
        "import cartograph.server.stdio",
        "import cartograph.cli.retrieval, cartograph.index.discover, cartograph.index.serving",
    ):
        loaded = set(_modules_after(code))
        assert sorted(m for m in ("bm25s", "scipy", "jsonschema") if m in loaded) == [], code


def test_a_proxy_without_code_mode_never_imports_the_sandbox_or_the_stub_renderer() -> None:
    # Code mode is off by default; `run`'s sandbox, bridge and stub renderer
    # load with the first catalog that turns it on (server/handlers.py).
    loaded = set(_modules_after("import cartograph.server.stdio.serve"))
    assert sorted(m for m in ("cartograph.codemode", "cartograph.stubs") if m in loaded) == []
