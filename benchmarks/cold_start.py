"""Cold start: `cartograph serve` launched to the first `discover` answer, with cached embeddings.

Runs the proxy twice against the same state directory: the first run fills
the embedding cache, the second is the measured cold start (process spawn,
imports, config, upstream connect + drift check, index build from cached
vectors, first query). Upstreams: our scriptable server, or ``--config``.

    .venv/bin/python benchmarks/cold_start.py [--config demo/cartograph.toml] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.support import scriptable, toml_for  # noqa: E402


async def first_discover(config: Path, attest: bool) -> float:
    args = ["-m", "cartograph.cli.main", "serve", "--config", str(config)]
    if attest:
        args.append("--unsafe-throwaway-key")
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    start = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("discover", {"task": "add two numbers", "k": 5})
        elapsed = time.perf_counter() - start
        assert not result.is_error, result
    return elapsed * 1000


async def main(config: Path | None, runs: int, attest: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        if config is None:
            config = Path(tmp) / "cartograph.toml"
            config.write_text(toml_for(Path(tmp) / "state", scriptable("calc"), scriptable("b")))
            attest = True
        warm = await first_discover(config, attest)  # fills the embedding cache
        samples = [await first_discover(config, attest) for _ in range(runs)]
    return {
        "config": str(config),
        "first_run_ms": round(warm, 1),
        "cold_start_ms_cached_embeddings": {
            "runs": [round(s, 1) for s in samples],
            "median": round(statistics.median(samples), 1),
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--unsafe-throwaway-key", action="store_true")
    options = parser.parse_args()
    report = anyio.run(main, options.config, options.runs, options.unsafe_throwaway_key)
    print(json.dumps(report, indent=2))
