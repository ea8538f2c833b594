"""A small catalog and its queries on disk: the input the eval and learning CLI tests share."""

from __future__ import annotations

import json
from pathlib import Path

from tests.index.retrieval_fixtures import small_catalog


def write_fixture(tmp_path: Path) -> tuple[Path, Path]:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(small_catalog().model_dump_json(by_alias=True))
    queries = tmp_path / "queries.jsonl"
    rows = [
        {
            "id": "q1",
            "query": "read a text file from disk",
            "gold": [{"server": "files", "tool": "read_file"}],
        },
        {
            "id": "q2",
            "query": "draw a bar chart image from numbers",
            "gold": [
                {"server": "charts", "tool": "bar_chart"},
                {"server": "files", "tool": "write_file"},
            ],
        },
    ]
    queries.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return catalog, queries
