"""The side-by-side benchmarks still run a tree through their ``--src`` path (issue 29).

``benchmarks/first_answer.py`` and ``benchmarks/serving_scale.py`` compare
checkouts by running each in a child process with that tree's ``src`` first on
the path. That path is exercised nowhere else, so it rotted unnoticed once
already (an argument older trees do not take). Here each runs this checkout's
``src`` through it on a tiny input: the numbers are the benchmark's business,
only that every figure arrives is checked.

``discover_latency.py`` takes ``--src`` and ``--python`` the same way: all three
read them through ``benchmarks/trees.py``, and each still refuses a tree it
cannot measure in the words it always used.
``first_answer.py --throwaway`` makes each tree bootstrap a state of its own
(``keys init`` and ``bootstrap`` run by that tree's code), and ``--imports``
reads ``serve``'s ``-X importtime`` log up to the first answer: both are run
here on this tree too.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks import first_answer, trees
from typer.testing import CliRunner

from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.catalog.snapshot import save_catalog
from cartograph.cli.main import build_app
from tests.helpers.support import scriptable, toml_for

SRC = Path(__file__).resolve().parents[1] / "src"
# Imported by name at run time: the script imports its sibling scripts as
# top-level modules (it runs as a script), which mypy cannot follow from here.
serving_scale: Any = importlib.import_module("benchmarks.serving_scale")
discover_latency: Any = importlib.import_module("benchmarks.discover_latency")
import_steps: Any = importlib.import_module("benchmarks.import_steps")


def _bootstrapped(tmp_path: Path) -> Path:
    """An operator's state with one signed card, written from a snapshot (no upstream)."""
    config = tmp_path / "cartograph.toml"
    config.write_text(toml_for(tmp_path / "state", scriptable("calc")))
    add = ToolDef.model_validate(
        {
            "name": "add",
            "description": "Add two integers.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
        }
    )
    save_catalog(Catalog(servers=(ServerDef(name="calc", tools=(add,)),)), tmp_path / "cat.json")
    for command in (["keys", "init"], ["bootstrap", "--catalog", str(tmp_path / "cat.json")]):
        result = CliRunner().invoke(build_app(), [*command, "--config", str(config)])
        assert result.exit_code == 0, result.output
    return config


def _interpreter_that_logs(tmp_path: Path) -> tuple[str, Path]:
    """An interpreter for ``--python NAME=EXE``: this one, noting each start in a file."""
    log = tmp_path / "python-starts.log"
    exe = tmp_path / "tree-python"
    exe.write_text(f'#!/bin/sh\necho started >> "{log}"\nexec "{sys.executable}" "$@"\n')
    exe.chmod(0o755)
    return str(exe), log


@pytest.mark.slow
def test_first_answer_measures_a_tree_given_by_its_src_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _bootstrapped(tmp_path)
    exe, log = _interpreter_that_logs(tmp_path)
    monkeypatch.setitem(first_answer.PYTHONS, SRC, exe)  # --python tree=EXE

    report = first_answer.run({"tree": SRC}, config, {}, runs=1, settle_s=0.0, warm=False)

    figures = report["results"]["tree"]
    for key in ("first_discover_ms", "first_discover_cpu_ms", "cli_discover_cpu_ms", "help_cpu_ms"):
        assert figures[key]["median"] > 0, key
    assert len(log.read_text().splitlines()) == 4  # serve, discover, --help, version


@pytest.mark.slow
def test_serving_scale_measures_a_tree_given_by_its_src_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe, log = _interpreter_that_logs(tmp_path)
    monkeypatch.setitem(serving_scale.PYTHONS, SRC, exe)  # --python tree=EXE

    report = serving_scale.run_all(
        ["12"], tmp_path / "stores", 2, "hybrid", {"tree": SRC}, runs=1, agreement=False
    )

    (row,) = report["rows"]
    assert (row["source"], row["tools"]) == ("tree", 12)
    assert row["methods"]["hybrid"]["cpu_p50_ms"] > 0
    assert row["rank_cpu_p50_ms"] > 0
    assert len(log.read_text().splitlines()) == 2  # prepare, then the measured child


@pytest.mark.slow
def test_first_answer_bootstraps_a_throwaway_state_with_the_trees_own_code(
    tmp_path: Path,
) -> None:
    configs = first_answer.throwaway_configs({"tree": SRC}, tmp_path)

    report = first_answer.run({"tree": SRC}, configs["tree"], {}, runs=1, settle_s=0.0, warm=False)
    assert report["results"]["tree"]["first_discover_ms"]["median"] > 0
    assert (tmp_path / "tree" / "state" / "trust.toml").is_file()


@pytest.mark.slow
def test_first_answer_reads_serves_imports_up_to_the_first_answer(tmp_path: Path) -> None:
    config = _bootstrapped(tmp_path)

    shares = first_answer.import_shares(SRC, config, None)

    assert "mcp_types" in shares and "cartograph.cli" in shares
    assert list(shares.values()) == sorted(shares.values(), reverse=True)


def test_import_shares_sum_self_time_per_package_and_cartograph_subpackage() -> None:
    log = "\n".join(
        [
            "import time: self [us] | cumulative | imported package",
            "import time:       500 |        500 |   numpy._core",
            "import time:       250 |        750 | numpy",
            "import time:      2000 |       2000 |     cartograph.index.cache",
            "import time:      1000 |       3000 |   cartograph.index",
            "import time:       300 |        300 | cartograph.cli.app",
            "a line the child printed itself",
        ]
    )

    assert first_answer.shares_of(log) == {
        "cartograph.index": 3.0,
        "numpy": 0.75,
        "cartograph.cli": 0.3,
    }


@pytest.mark.slow
def test_discover_latency_measures_a_tree_given_by_its_src_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe, log = _interpreter_that_logs(tmp_path)
    monkeypatch.setitem(discover_latency.PYTHONS, SRC, exe)  # --python tree=EXE

    report = discover_latency.run_all(["12"], tmp_path / "caches", 2, "hybrid", {"tree": SRC})

    embedder, row = report["rows"]
    assert (embedder["source"], embedder["scale"]) == ("tree", "embedder")
    assert (row["source"], row["tools"]) == ("tree", 12)
    assert row["methods"]["hybrid"]["cpu_p50_ms"] > 0
    assert len(log.read_text().splitlines()) == 3  # embedder, prepare, the measured child


def test_import_steps_times_every_step_of_a_tree_given_by_its_src_folder() -> None:
    steps = import_steps.one_run(SRC, paused=True)

    assert len(steps) == len(import_steps.STEPS)
    assert steps[2] > 0 and steps[3] > 0  # the MCP SDK: never already imported


def test_blink_puts_every_tree_and_floor_in_one_table() -> None:
    """``benchmarks/blink.py`` renders the three benchmarks' reports side by side.

    Its children are the benchmarks tested above; what is its own is the table:
    every tree a column, this checkout last, each section with its load, and
    the floors and the call rows present.
    """
    blink: Any = importlib.import_module("benchmarks.blink")

    def medians(value: float) -> dict[str, Any]:
        keys = ("first_discover_ms", "first_discover_cpu_ms", "cli_discover_cpu_ms")
        return {key: {"median": value} for key in (*keys, "help_cpu_ms")}

    overhead = {"p50": 1.25, "p99": 3.5, "mean": 1.5}
    report = {
        "first_answer": {
            "runs": 5,
            "load_average": [1.0, 2.0, 3.0],
            "results": {"this": medians(900.0), "old": medians(5000.0)},
        },
        "discover_latency": {
            "loadavg": [4.0, 4.0, 4.0],
            "rows": [
                {"source": name, "scale": "livemcpbench", "methods": {"hybrid": {"cpu_p50_ms": v}}}
                for name, v in (("old", 12.0), ("this", 5.5))
            ]
            + [{"source": "this", "scale": "embedder", "task_query_p50_ms": 3.9}],
        },
        "bm25s_floor": {"cpu_p50_ms": 0.12, "tools": 527},
        "gateway_latency": {
            "load_average": {"before": [1.0, 1.0, 1.0], "after": [2.0, 2.0, 2.0]},
            "fast": {"overhead_over_direct_ms": {"pooled": overhead, "bare_loop": overhead}},
        },
    }
    text = blink.table(report)
    assert "| | old | this |" in text
    assert "| `serve` spawned → first `discover` answered (wall) | 5.00 s | 0.90 s |" in text
    assert "| hybrid `discover` (CPU p50) | 12.00 ms | 5.50 ms |" in text
    assert "0.12 ms CPU p50" in text and "load average 4.0/4.0/4.0" in text
    assert "| pooled | +1.25 ms | +3.50 ms |" in text


# -- the trees on the command line (benchmarks/trees.py) ------------------------------------


@pytest.mark.parametrize(
    ("script", "argv", "refusal"),
    [
        ("first_answer", ["--src", "old"], "--src wants NAME=PATH, got 'old'"),
        (
            "first_answer",
            ["--src", "old=/tmp/old", "--python", "new=/bin/py"],
            "--python wants NAME=EXE for a --src NAME, got 'new=/bin/py'",
        ),
        ("discover_latency", ["--src", "old="], "--src wants NAME=PATH, got 'old='"),
        (
            "discover_latency",
            ["--src", "old=/tmp/old", "--python", "old"],
            "--python wants NAME=EXE for a --src NAME=PATH, got 'old'",
        ),
        (
            "serving_scale",
            ["--src", "old", "--python", "old=/bin/py"],
            "--python wants NAME=EXE for a --src NAME=PATH, got 'old=/bin/py'",
        ),
    ],
)
def test_each_script_refuses_a_tree_it_cannot_measure_in_its_own_words(
    script: str, argv: list[str], refusal: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module: Any = importlib.import_module(f"benchmarks.{script}")
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv])

    with pytest.raises(SystemExit) as refused:
        module.main()

    assert refused.value.code == refusal
    assert module.PYTHONS == {}


def test_trees_keep_their_order_and_a_later_name_wins(tmp_path: Path) -> None:
    specs = [f"b={tmp_path / 'one'}", f"a={tmp_path / 'two'}", f"b={tmp_path / 'three'}"]

    sources = trees.sources_from(specs)

    assert sources == {"b": tmp_path / "three", "a": tmp_path / "two"}
    assert list(sources) == ["b", "a"]
    assert trees.interpreters_from(["a=/bin/py"], sources) == {tmp_path / "two": "/bin/py"}


def test_a_bare_name_is_this_interpreters_code_and_takes_no_python(tmp_path: Path) -> None:
    sources = trees.sources_or_bare(["now", f"old={tmp_path}"])

    assert sources == {"now": None, "old": tmp_path}
    with pytest.raises(SystemExit) as refused:
        trees.interpreters_from(["now=/bin/py"], sources)
    assert refused.value.code == "--python wants NAME=EXE for a --src NAME=PATH, got 'now=/bin/py'"


def test_blink_hands_the_trees_on_as_it_was_given_them() -> None:
    assert trees.tree_args(["old=/tmp/old", "odd"], ["old=/bin/py"]) == [
        "--src=old=/tmp/old",
        "--src=odd",
        "--python=old=/bin/py",
    ]
