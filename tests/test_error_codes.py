"""Error codes live in one registry, the docs list exactly those, and code raises by name.

The registry (``cartograph.error_codes``) is the single source; these tests keep the three
things that drift apart in practice tied to it: the docs' code tables, the raise sites, and
the error classes' own defaults and docstrings.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections import Counter
from pathlib import Path

import pytest

from cartograph import error_codes, errors
from cartograph.error_codes import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "cartograph"
REGISTRY_FILES = SRC / "error_codes"
"""The registry's own package: the one place a code is written as a string."""
DOCS = ROOT / "docs"
TABLE_HEADER = re.compile(r"^\|\s*code\s*\|\s*meaning\s*\|\s*$")
FIRST_CELL = re.compile(r"^\|([^|]*)\|")
CODE = re.compile(r"`([a-z][a-z0-9_]*)`")

ERROR_CLASSES = [
    cls
    for cls in vars(errors).values()
    if inspect.isclass(cls) and issubclass(cls, errors.CartographError)
]


def documented_codes(text: str) -> list[str]:
    """The codes in every ``| code | meaning |`` table of one Markdown document."""
    found: list[str] = []
    in_table = False
    for line in text.splitlines():
        if TABLE_HEADER.match(line):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            in_table = False
        cell = FIRST_CELL.match(line) if in_table and not line.startswith("|--") else None
        if cell:
            found.extend(CODE.findall(cell.group(1)))
    return found


def all_documented_codes() -> list[str]:
    found: list[str] = []
    for doc in sorted(DOCS.glob("*.md")):
        found.extend(documented_codes(doc.read_text(encoding="utf-8")))
    return found


def test_every_registered_code_is_documented_in_a_docs_code_table() -> None:
    missing = sorted(set(REGISTRY) - set(all_documented_codes()))
    assert not missing, f"add these to a `| code | meaning |` table in docs/: {missing}"


def test_every_code_in_a_docs_code_table_is_registered() -> None:
    unknown = sorted(set(all_documented_codes()) - set(REGISTRY))
    assert not unknown, f"documented but not in cartograph.error_codes: {unknown}"


def test_each_code_is_documented_once() -> None:
    twice = sorted(c for c, n in Counter(all_documented_codes()).items() if n > 1)
    assert not twice


def test_table_reader_finds_rows_only_inside_code_tables() -> None:
    text = (
        "| code | meaning |\n|---|---|\n| `a_b`, `e_f` (`Cls`) | x `g_h` |\n\n"
        "| `c_d` | not a code table |\n"
    )
    assert documented_codes(text) == ["a_b", "e_f"]


def test_each_constant_is_named_after_its_code_and_registered() -> None:
    constants = {
        name: value
        for name, value in vars(error_codes).items()
        if name.isupper() and name != "REGISTRY" and isinstance(value, str)
    }
    assert {name: name.lower() for name in constants} == constants
    assert set(constants.values()) == set(REGISTRY)


def test_every_meaning_is_one_line() -> None:
    assert all(m.strip() and "\n" not in m for m in REGISTRY.values())


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_says_when_it_is_raised_and_has_a_registered_code(
    cls: type[errors.CartographError],
) -> None:
    doc = vars(cls).get("__doc__") or ""
    assert "Raised" in doc, f"{cls.__name__}: say when it is raised and what to do"
    assert cls.code in REGISTRY


def literal_codes(tree: ast.AST) -> list[tuple[int, str]]:
    """String literals written where a code goes: ``code=``/``outcome=``, ``"code": ...``,
    ``code = ...`` and a ``code`` parameter's default."""
    found: list[tuple[int, str]] = []

    def check(node: ast.expr | None) -> None:
        if isinstance(node, ast.IfExp):
            check(node.body)
            check(node.orelse)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))

    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in ("code", "outcome"):
            check(node.value)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "code":
                    check(value)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "code" for t in targets):
                check(node.value)
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            pairs = [
                *zip(
                    positional[len(positional) - len(node.defaults) :], node.defaults, strict=True
                ),
                *zip(node.kwonlyargs, node.kw_defaults, strict=True),
            ]
            for arg, default in pairs:
                if arg.arg in ("code", "outcome"):
                    check(default)
    return found


def test_literal_scan_catches_a_code_written_as_a_string() -> None:
    tree = ast.parse(
        'raise E("m", code="x")\nd = {"code": "y"}\ncode = "z" if a else C.W\n'
        'def f(a, code="v", *, outcome: str = "w"): pass\n'
    )
    assert sorted(v for _, v in literal_codes(tree)) == ["v", "w", "x", "y", "z"]


def test_raise_sites_use_registry_constants_not_string_literals() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{line}: {value!r}"
        for path in sorted(SRC.rglob("*.py"))
        if REGISTRY_FILES not in path.parents
        for line, value in literal_codes(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not offenders, "use a cartograph.error_codes constant: " + ", ".join(offenders)


def test_every_registered_code_is_used_by_the_code() -> None:
    source = "\n".join(
        path.read_text(encoding="utf-8")
        for path in SRC.rglob("*.py")
        if REGISTRY_FILES not in path.parents
    )
    unused = [code for code in REGISTRY if f"codes.{code.upper()}" not in source]
    assert not unused, f"registered but never raised (remove them, and from docs): {unused}"


def test_the_drawn_hierarchy_names_every_error_class() -> None:
    drawing = errors.__doc__ or ""
    missing = [c.__name__ for c in ERROR_CLASSES if not re.search(rf"\b{c.__name__}\b", drawing)]
    assert not missing, f"draw these in cartograph/errors.py's docstring: {missing}"
