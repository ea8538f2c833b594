"""`cartograph eval` end to end on a tiny fixture catalog, with hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cartograph.cli.main import build_app
from cartograph.errors import CatalogError
from cartograph.eval.data import load_queries
from tests.eval.support import write_fixture


def test_eval_prints_hand_computed_metrics_as_json(tmp_path: Path) -> None:
    catalog, queries = write_fixture(tmp_path)
    args = ["eval", "--catalog", str(catalog), "--queries", str(queries)]
    args += ["--method", "bm25", "--embedder", "fake", "--no-raw", "--json"]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (row,) = report["rows"]
    m = {name: v["mean"] for name, v in row["metrics"].items()}
    # q1: its one gold tool first. q2: bar_chart first, write_file (1 of 2 gold) not at rank 1.
    assert m["Hit@1"] == 1.0
    assert m["MRR"] == 1.0
    assert m["R@1"] == pytest.approx((1.0 + 0.5) / 2)
    assert row["metrics"]["Hit@1"]["low"] == row["metrics"]["Hit@1"]["high"] == 1.0
    assert row["failures"] == []
    assert report["queries"] == 2 and report["tools"] == 6


def test_a_malformed_queries_line_is_rejected_with_its_code(tmp_path: Path) -> None:
    bad = tmp_path / "queries.jsonl"
    bad.write_text('{"id": "q1", "query": "x"}\n')
    with pytest.raises(CatalogError) as err:
        load_queries(bad)
    assert err.value.code == "bad_query_line"
