"""``rift --regenerate`` before → after on a catalog, and a second run (must change nothing).

    .venv/bin/python benchmarks/rift_regenerate.py CATALOG.json [...]

Per catalog, in a temporary state dir: ``keys init``, ``bootstrap`` (template
cards, signed), Rift (before), ``rift --regenerate``, Rift (after), then
``rift --regenerate`` again. Prints HIGH clusters, tools in HIGH clusters and
REGENERATE tools before and after, how many descriptions and cards the first
run changed, and what the second run changed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "cartograph.cli.main", *args, "--config", str(config)]
    return subprocess.run(argv, capture_output=True, text=True, check=True)


def _counts(config: Path) -> dict[str, int]:
    report = json.loads(_cli(config, "rift", "--json").stdout)
    high = [c for c in report["clusters"] if c["risk"] == "HIGH"]
    return {
        "HIGH": len(high),
        "tools in HIGH": sum(len(c["members"]) for c in high),
        "REGENERATE": len(report["summary"]["regenerate"]),
    }


def _changed(stderr: str) -> tuple[int, int]:
    found = re.search(r"rewrote (\d+) tool description\(s\), re-signed (\d+) card", stderr)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def measure(catalog: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "cartograph.toml"
        config.write_text(f'state_dir = "state"\ncatalog = {json.dumps(str(catalog.resolve()))}\n')
        _cli(config, "keys", "init")
        _cli(config, "bootstrap")
        before = _counts(config)
        first = _changed(_cli(config, "rift", "--regenerate", "--json").stderr)
        after = _counts(config)
        second = _changed(_cli(config, "rift", "--regenerate", "--json").stderr)
    return {
        "catalog": catalog.parent.name,
        "before": before,
        "after": after,
        "first run (descriptions, cards)": first,
        "second run (descriptions, cards)": second,
    }


def main(argv: list[str] | None = None) -> int:
    for catalog in argv if argv is not None else sys.argv[1:]:
        print(json.dumps(measure(Path(catalog))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
