"""The demo's code-mode task, done both ways through the real proxy.

The task: the best seller in two months of café orders (``files/orders/``, two CSV
files the demo's ``filesystem`` server reads). An agent can do it **step by step**:
``discover``, then ``call`` ``list_directory`` and ``read_text_file`` once per file,
reading every reply (both files whole) and computing the answer itself; or send
**one program** to ``run`` after the same ``discover``: the sandbox makes those three
calls and only the answer and a printed line come back. :func:`compare` does both over
one SDK client and keeps every text the agent read and every argument it wrote, so
the step can count them (cl100k tokens, :mod:`cartograph.demo.tokens`, as
``benchmarks/code_mode.py`` does) and its model round trips (one per tool call).

The step-by-step agent is scripted: it calls the filesystem tools by name rather
than whichever discover ranks first, so the comparison never turns on a score
margin. Both ways share one ``discover`` (the agent reads it either way).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp import Client

from cartograph import error_codes as codes
from cartograph.demo import agent
from cartograph.demo.tokens import TokenCounter
from cartograph.errors import DemoError

RUN: Final = "run"
FOLDER: Final = Path("files") / "orders"
"""The orders, relative to the demo config's folder (the filesystem server's root)."""
TASK: Final = "list a folder and read its files"
DISCOVER_K: Final = 5
SERVER: Final = "filesystem"
LIST, READ = "list_directory", "read_text_file"
CHECK: Final = "code mode: one run gives the step-by-step answer"

PROGRAM: Final = """\
import asyncio

folder = inputs["folder"]
listing = (await filesystem.list_directory(path=folder))["content"]
files = [l[7:] for l in listing.splitlines() if l.startswith("[FILE] ")]
names = sorted(n for n in files if n.endswith(".csv"))
replies = await asyncio.gather(*[filesystem.read_text_file(path=f"{folder}/{n}") for n in names])
units = {}
orders = 0
for reply in replies:
    for line in reply["content"].splitlines()[1:]:
        if line.strip():
            day, item, quantity = line.split(",")
            units[item] = units.get(item, 0) + int(quantity)
            orders += 1
top = max(sorted(units), key=lambda item: units[item])
print(f"{len(names)} files, {orders} orders")
total = sum(units.values())
{"files": names, "orders": orders, "units": total, "top_item": top, "top_units": units[top]}
"""
"""What the agent sends to ``run``: the same task as :func:`best_seller`, in the sandbox."""


def csv_names(listing: str) -> list[str]:
    """The CSV files in ``list_directory``'s text (``[FILE] name`` lines), sorted."""
    return sorted(
        line.removeprefix("[FILE] ")
        for line in listing.splitlines()
        if line.startswith("[FILE] ") and line.endswith(".csv")
    )


def best_seller(files: Mapping[str, str]) -> dict[str, Any]:
    """The answer from the files' texts, as the step-by-step agent works it out.

    Integers only, so the sandbox's arithmetic cannot differ from the host's.
    """
    units: dict[str, int] = {}
    orders = 0
    for text in files.values():
        for line in text.splitlines()[1:]:
            if line.strip():
                _day, item, quantity = line.split(",")
                units[item] = units.get(item, 0) + int(quantity)
                orders += 1
    top = max(sorted(units), key=lambda item: units[item])
    return {
        "files": sorted(files),
        "orders": orders,
        "units": sum(units.values()),
        "top_item": top,
        "top_units": units[top],
    }


def describe(answer: Any) -> str:
    """One line for an answer: ``espresso, 79 of 280 units in 80 orders (2 files)``."""
    try:
        return (
            f"{answer['top_item']}, {answer['top_units']} of {answer['units']} units in "
            f"{answer['orders']} orders ({len(answer['files'])} files)"
        )
    except (KeyError, TypeError):
        return json.dumps(answer, ensure_ascii=False)[:200]


@dataclass
class Way:
    """One way of doing the task: each argument object the agent wrote, each reply it read."""

    written: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    answer: Any = None

    @property
    def round_trips(self) -> int:
        """Model turns that end in a tool call: one per request the agent made."""
        return len(self.written)

    def turn(self, arguments: Mapping[str, Any], text: str) -> str:
        self.written.append(json.dumps(dict(arguments), ensure_ascii=False))
        self.read.append(text)
        return text

    def to_dict(self, count: TokenCounter | None) -> dict[str, Any]:
        return {
            "round_trips": self.round_trips,
            "read_bytes": sum(len(text.encode()) for text in self.read),
            "read_tokens": sum(map(count, self.read)) if count else None,
            "written_tokens": sum(map(count, self.written)) if count else None,
            "answer": self.answer,
        }


@dataclass(frozen=True)
class Comparison:
    """Both ways of the task, or why the step was skipped."""

    steps: Way = field(default_factory=Way)
    program: Way = field(default_factory=Way)
    reply: dict[str, Any] = field(default_factory=dict)
    """The run's ``structuredContent``: value, printed, one line per inner call, ms."""
    skipped: str | None = None

    @property
    def same_answer(self) -> bool:
        return self.skipped is None and self.steps.answer == self.program.answer

    def detail(self) -> str:
        """The check's detail: the answer, or both answers when they differ."""
        if self.same_answer:
            return describe(self.program.answer)
        return f"run: {describe(self.program.answer)}; step by step: {describe(self.steps.answer)}"

    def to_dict(self, count: TokenCounter | None) -> dict[str, Any]:
        if self.skipped is not None:
            return {"skipped": self.skipped}
        return {
            "task": TASK,
            "folder": FOLDER.as_posix(),
            "steps": self.steps.to_dict(count),
            "run": self.program.to_dict(count),
            "inner_calls": self.reply.get("calls", []),
            "printed": self.reply.get("printed", ""),
            "run_ms": self.reply.get("ms"),
            "same_answer": self.same_answer,
            "tokens": "cl100k_base" if count else None,
        }


async def compare(client: Client, folder: Path) -> Comparison:
    """The task both ways on ``folder`` (absolute); skipped when the proxy cannot run code.

    A refused or failed tool call, or a run that fails for any reason but a
    missing sandbox, raises :class:`DemoError` with its code.
    """
    names, _ = await agent.list_proxy_tools(client)
    if RUN not in names:
        return Comparison(
            skipped="code mode is off in this config: [code_mode] enabled = true turns it on"
        )
    asked = {"task": TASK, "k": DISCOVER_K}
    found = await agent.discover(client, TASK, DISCOVER_K)
    steps, program = Way(), Way()
    for way in (steps, program):
        way.turn(asked, found.text)
    # Step by step first: its calls wait for the filesystem server if it is still
    # connecting, and a program sees only the tools of servers already listed.
    await _step_by_step(client, steps, folder)
    reply = await _one_run(client, program, folder)
    if reply.get("error", {}).get("code") == codes.CODE_MODE_NOT_INSTALLED:
        return Comparison(
            skipped="the sandbox is not installed: pip install 'cartograph[code]' "
            "(scripts/setup --demo installs it)"
        )
    _raise_if_failed(reply)
    return Comparison(steps, program, reply)


async def _one_run(client: Client, way: Way, folder: Path) -> dict[str, Any]:
    arguments = {"code": PROGRAM, "inputs": {"folder": str(folder)}}
    result = await client.call_tool(RUN, arguments)
    way.turn(arguments, agent.result_text(result))
    reply = result.structured_content if isinstance(result.structured_content, dict) else {}
    way.answer = reply.get("value")
    return reply


def _raise_if_failed(reply: Mapping[str, Any]) -> None:
    error = reply.get("error")
    if isinstance(error, dict):
        where = f" (program line {error['line']})" if error.get("line") else ""
        raise DemoError(
            f"run failed{where}: {error.get('message', '')}",
            code=error.get("code", codes.DEMO_FAILED),
        )
    if "value" not in reply:
        raise DemoError(f"run answered no value: {json.dumps(reply)[:300]}", code=codes.DEMO_FAILED)


async def _step_by_step(client: Client, way: Way, folder: Path) -> None:
    listing = await _call(client, way, LIST, {"path": str(folder)})
    files = {
        name: await _call(client, way, READ, {"path": f"{folder}/{name}"})
        for name in csv_names(listing)
    }
    way.answer = best_seller(files)


async def _call(client: Client, way: Way, tool: str, arguments: dict[str, Any]) -> str:
    meta = {"server": SERVER, "tool": tool, "arguments": arguments}
    result = await agent.call(client, SERVER, tool, arguments)
    text = way.turn(meta, agent.result_text(result))
    if result.is_error:
        raise DemoError(f"call {SERVER}/{tool} failed: {text[:300]}", code=codes.DEMO_FAILED)
    return text
