"""The fault and load benchmark in its short form: the proxy holds under abuse (issue 13).

``benchmarks/fault_load.py --short`` as a test: 5 clients x 20 calls over
HTTP while a sixth sends 4 MB ``discover`` tasks, then the whole fault matrix
against real ``serve`` processes. Latency is the benchmark's to report, not
this test's: here every call must be answered, without error, with exactly
one audit record, and every fault must end with the error its promise names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.fault_load import KNOWN_OPEN, run


@pytest.mark.slow
@pytest.mark.promise("P-REL-10")
@pytest.mark.promise("P-REL-7")
def test_short_fault_and_load_run_loses_nothing_and_every_fault_gets_its_error(
    tmp_path: Path,
) -> None:
    report = run(5, 20, folder=tmp_path)
    load = report["load"]
    for figures in load["runs"]:
        assert figures["errors"] == 0, figures
        assert figures["calls"] == 100
    heavy = load["runs"][1]
    assert heavy["heavy_sent"] >= 1
    assert set(heavy["heavy_codes"]) == {"task_too_long"}
    assert load["audit_per_call"] == 1.0
    assert load["audit_per_heavy_discover"] == 1.0
    for row in report["faults"]:
        assert row["lost"] == 0, row
        assert row["audit_records"] == row["calls"], row
        if row["fault"] not in KNOWN_OPEN:
            assert row["observed"] == row["expected"], row
        assert "left running" not in row["note"], row  # no upstream child outlives the proxy
