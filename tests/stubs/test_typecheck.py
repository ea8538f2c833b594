"""Generated packages type-check under ``mypy --strict`` and import cleanly.

One mypy run covers everything (the whole LiveMCPBench catalog, the awkward
fixture catalog, a correct client script and a deliberately wrong one), so the
test stays reasonably fast. The wrong script proves the types are real: mypy
must flag exactly its marked lines and nothing else anywhere.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog import load_catalog
from cartograph.stubs import generate_stubs, write_stubs
from tests.stubs.catalogs import awkward_catalog
from tests.stubs.support import mypy_strict

CLIENT_OK = """
from awkward_stubs import awkward_server_1 as a

def use() -> None:
    a.get_weather("Paris", units="f", days=2, from_="me", class_=1, list=["x"])
    point: a.ShapesPoint_2 = {"x": 1.0, "y": 2}
    a.shapes(point, tree={"label": "root", "children": [{"label": "leaf"}]}, scalar=None)
    hits: list[a.StructuredResultHitsItem] = a.structured(q="x")["hits"]
    print(hits[0]["id"] + 1, a.map_only(a=1, b=2).text)
"""

CLIENT_WRONG = """
from awkward_stubs import awkward_server_1 as a

def misuse() -> None:
    a.get_weather(city=1)  # WRONG
    a.get_weather("Paris", units="kelvin")  # WRONG
    a.shapes(point={"x": 1.0})  # WRONG
    a.structured(q="x")["hits"][0]["id"].upper()  # WRONG
    a.shapes({"x": 1.0, "y": 2.0}, tree={"children": []})  # WRONG
    a.map_only(a="one")  # WRONG
"""


def _write_packages(root: Path, bench: Path) -> int:
    bench_stubs = generate_stubs(
        attest_with_unsafe_throwaway_key(load_catalog(bench)), package="bench_stubs"
    )
    write_stubs(bench_stubs, root)
    write_stubs(
        generate_stubs(
            attest_with_unsafe_throwaway_key(awkward_catalog()), package="awkward_stubs"
        ),
        root,
    )
    (root / "client_ok.py").write_text(CLIENT_OK)
    (root / "client_wrong.py").write_text(CLIENT_WRONG)
    return bench_stubs.tool_count


@pytest.mark.slow
def test_generated_packages_pass_mypy_strict_and_import(
    tmp_path: Path, livemcpbench_catalog_path: Path
) -> None:
    assert _write_packages(tmp_path, livemcpbench_catalog_path) == 527
    run = mypy_strict(tmp_path, "bench_stubs", "awkward_stubs", "client_ok.py", "client_wrong.py")
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    wrong_lines = {i for i, line in enumerate(CLIENT_WRONG.splitlines(), 1) if "# WRONG" in line}
    flagged = {int(m.group(1)) for e in errors if (m := re.match(r"client_wrong\.py:(\d+):", e))}
    elsewhere = [e for e in errors if not e.startswith("client_wrong.py:")]
    assert elsewhere == [], "\n".join(elsewhere[:20]) + run.stderr
    assert flagged == wrong_lines, run.stdout

    sys.path.insert(0, str(tmp_path))
    try:
        for package in ("bench_stubs", "awkward_stubs"):
            root = importlib.import_module(package)
            for module in root.__all__:
                importlib.import_module(f"{package}.{module}")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n.split(".")[0] in ("bench_stubs", "awkward_stubs")]:
            del sys.modules[name]
