"""Wall time of ``cartograph rift`` warm (embedding cache filled), as an operator runs it.

    .venv/bin/python benchmarks/rift_speed.py [--runs 3] CATALOG.json [...]

Each catalog gets a temporary config (``catalog = CATALOG``) whose state dir
holds the embedding cache. Two paths are timed, each after one cold run fills
the cache: ``snapshot`` (``rift --catalog``: template cards attested in memory
on every run) and ``signed`` (after ``keys init`` + ``bootstrap``: the
operator's signed cards loaded and verified, as ``cartograph rift`` runs in
CI). Each time is the whole command: process start, imports, cards, analysis,
JSON output.
The target (issue 15) is ≤ 5 s warm on the demo federation and LiveMCPBench.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "cartograph.cli.main", *args, "--config", str(config)]
    return subprocess.run(argv, capture_output=True, text=True, check=True)


def _run(config: Path, catalog: Path | None) -> tuple[float, dict[str, float]]:
    extra = ["--catalog", str(catalog)] if catalog is not None else []
    start = time.perf_counter()
    done = _cli(config, "rift", "--json", *extra)
    wall = time.perf_counter() - start
    seconds: dict[str, float] = json.loads(done.stdout)["seconds"]
    return wall, seconds


def _timed(config: Path, catalog: Path | None, runs: int) -> dict[str, object]:
    cold, _ = _run(config, catalog)
    warm = [_run(config, catalog) for _ in range(runs)]
    walls = [w for w, _ in warm]
    return {
        "cold_s": round(cold, 2),
        "warm_median_s": round(statistics.median(walls), 2),
        "warm_max_s": round(max(walls), 2),
        "analysis_s": warm[-1][1].get("total"),
    }


def measure(catalog: Path, runs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "cartograph.toml"
        config.write_text(f'state_dir = "state"\ncatalog = {json.dumps(str(catalog.resolve()))}\n')
        snapshot = _timed(config, catalog, runs)
        _cli(config, "keys", "init")
        _cli(config, "bootstrap")
        signed = _timed(config, None, runs)
    return {"catalog": catalog.parent.name, "snapshot": snapshot, "signed": signed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalogs", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    for catalog in args.catalogs:
        print(json.dumps(measure(catalog, args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
