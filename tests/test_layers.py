"""The packages import one way, down the layers drawn in docs/architecture.md, never in a cycle.

Imports are read with :mod:`ast`, so an import inside a function (the lazy
imports that keep ``cartograph --help`` fast) or under ``TYPE_CHECKING``
counts exactly like one at the top of a module, and so does
``importlib.import_module("cartograph.…")`` with a literal name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
PACKAGE: Final = ROOT / "src" / "cartograph"
ARCHITECTURE: Final = ROOT / "docs" / "architecture.md"
_DRAWING: Final = re.compile(r"<!-- layers -->\s*```text\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Import:
    """One import statement: which module, which line, what it imports."""

    module: str
    line: int
    target: str


def drawn_layers(markdown: str) -> list[frozenset[str]]:
    """The layer drawing in docs/architecture.md, lowest layer first.

    The drawing is a ``text`` block after a ``<!-- layers -->`` marker: one
    layer per line, top layer first, names separated by spaces.
    """
    found = _DRAWING.search(markdown)
    assert found is not None, "docs/architecture.md has no <!-- layers --> drawing"
    rows = [line.split() for line in found.group(1).splitlines() if line.strip()]
    return [frozenset(row) for row in reversed(rows)]


def unit_of(module: str) -> str:
    """The package (or root module) a dotted module name belongs to (``__init__``: the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules(package: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(module: str, source: str, *, is_package: bool, known: Set[str]) -> Iterator[Import]:
    """Every import of a ``cartograph`` module in ``source``, wherever it sits."""
    here = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _resolved(module, node.lineno, alias.name, known)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(here, node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield from _resolved(module, node.lineno, sub if sub in known else base, known)
        elif _is_import_module_call(node):
            assert isinstance(node, ast.Call) and isinstance(node.args[0], ast.Constant)
            yield from _resolved(module, node.lineno, str(node.args[0].value), known)


def _absolute(here: str, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    parts = here.split(".")[: len(here.split(".")) - (level - 1)]
    return ".".join([*parts, name] if name else parts)


def _is_import_module_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    first = node.args[0]
    return (
        name == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str)
    )


def _resolved(module: str, line: int, target: str, known: Set[str]) -> Iterator[Import]:
    if target == "cartograph" or target.startswith("cartograph."):
        while target not in known and "." in target:
            target = target.rpartition(".")[0]
        yield Import(module, line, target)


def all_imports(package: Path = PACKAGE) -> list[Import]:
    """Every import between Cartograph's own modules."""
    modules = _modules(package)
    found: list[Import] = []
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        is_package = path.name == "__init__.py"
        found.extend(imports_of(module, source, is_package=is_package, known=modules.keys()))
    return found


def upward_imports(imports: list[Import], layers: list[frozenset[str]]) -> list[str]:
    """Imports whose target is not in a strictly lower layer than the importer."""
    rank = {unit: level for level, row in enumerate(layers) for unit in row}
    bad = []
    for item in imports:
        source, target = unit_of(item.module), unit_of(item.target)
        if source != target and rank[target] >= rank[source]:
            bad.append(f"{item.module}:{item.line} imports {item.target} ({target} ≮ {source})")
    return bad


def cycles(graph: Mapping[str, Set[str]]) -> list[list[str]]:
    """Strongly connected components of two or more nodes (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


SERVER: Final = "cartograph.server"
TRANSPORTS: Final = (f"{SERVER}.stdio", f"{SERVER}.http")
"""The transport rooms of ``server/``: each reaches the rest of the package, never the other."""
MOUNTS: Final = tuple(
    f"{SERVER}.{name}" for name in ("handlers", "content_handlers", "routed", "proxy", "code_tool")
)
"""What serves a catalog over MCP, built on the runtime room and never below it."""


def _within(module: str, rooms: tuple[str, ...]) -> str | None:
    return next((room for room in rooms if module == room or module.startswith(f"{room}.")), None)


def room_breaches(imports: list[Import]) -> list[str]:
    """Imports that break the rooms of ``server/`` (docs/architecture.md, its rooms).

    ``server/runtime/`` (one catalog, live) imports neither a mount nor a transport;
    a transport is imported only by itself and by ``cli``.
    """
    bad = []
    for item in imports:
        source, target = item.module, item.target
        runtime = _within(source, (f"{SERVER}.runtime",))
        reaches = _within(target, TRANSPORTS + MOUNTS)
        transport = _within(target, TRANSPORTS)
        if runtime and reaches:
            bad.append(f"{source}:{item.line} imports {target} (the runtime room is below it)")
        elif transport and _within(source, (transport,)) is None and unit_of(source) != "cli":
            bad.append(f"{source}:{item.line} imports {target} (only cli starts a transport)")
    return bad


def _module_graph(imports: list[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for item in imports:
        if item.target != item.module:
            graph.setdefault(item.module, set()).add(item.target)
    return graph


# -- the code base ------------------------------------------------------------------------


def test_every_package_sits_in_exactly_one_drawn_layer() -> None:
    layers = drawn_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    drawn = [unit for row in layers for unit in row]
    units = {unit_of(module) for module in _modules(PACKAGE)}
    assert len(drawn) == len(set(drawn)), "a package is drawn in two layers"
    assert set(drawn) == units, (
        f"draw these in docs/architecture.md: {sorted(units - set(drawn))}; "
        f"these are drawn but do not exist: {sorted(set(drawn) - units)}"
    )


def test_packages_import_only_from_lower_layers() -> None:
    layers = drawn_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    assert upward_imports(all_imports(), layers) == []


def test_no_module_imports_itself_through_a_cycle() -> None:
    assert cycles(_module_graph(all_imports())) == []


def test_the_rooms_of_server_keep_their_direction() -> None:
    assert room_breaches(all_imports()) == []


# -- the checks themselves can fail ---------------------------------------------------------


def _fake_package(tmp_path: Path, files: Mapping[str, str]) -> Path:
    package = tmp_path / "cartograph"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_a_lazy_import_up_the_layers_is_found(tmp_path: Path) -> None:
    package = _fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "config/__init__.py": "",
            "config/loader.py": "def load():\n    from cartograph.upstream import names\n",
            "upstream/__init__.py": "",
            "upstream/names.py": "from ..config import loader\n",
        },
    )
    layers = [frozenset({"__init__"}), frozenset({"config"}), frozenset({"upstream"})]
    assert upward_imports(all_imports(package), layers) == [
        "cartograph.config.loader:2 imports cartograph.upstream.names (upstream ≮ config)"
    ]


def test_a_same_layer_import_and_an_import_module_call_are_found(tmp_path: Path) -> None:
    package = _fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "cli.py": "import importlib\nimportlib.import_module('cartograph.demo.run')\n",
            "demo/__init__.py": "",
            "demo/run.py": "",
        },
    )
    layers = [frozenset({"__init__"}), frozenset({"cli", "demo"})]
    assert upward_imports(all_imports(package), layers) == [
        "cartograph.cli:2 imports cartograph.demo.run (demo ≮ cli)"
    ]


def test_a_cycle_between_two_modules_of_one_package_is_found(tmp_path: Path) -> None:
    package = _fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "config/__init__.py": "",
            "config/model.py": "def f():\n    from cartograph.config.catalogs import x\n",
            "config/catalogs.py": "from cartograph.config.model import Config\n",
        },
    )
    assert cycles(_module_graph(all_imports(package))) == [
        ["cartograph.config.catalogs", "cartograph.config.model"]
    ]


def test_the_drawing_is_read_top_layer_first() -> None:
    text = "# A\n<!-- layers -->\n```text\ncli\nserver  eval\nerrors\n```\n"
    assert drawn_layers(text) == [
        frozenset({"errors"}),
        frozenset({"server", "eval"}),
        frozenset({"cli"}),
    ]


def test_a_runtime_reaching_a_mount_and_a_transport_reaching_the_other_are_found(
    tmp_path: Path,
) -> None:
    package = _fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "server/__init__.py": "",
            "server/handlers.py": "",
            "server/runtime/__init__.py": "",
            "server/runtime/catalog.py": "from cartograph.server import handlers\n",
            "server/stdio/__init__.py": "",
            "server/stdio/serve.py": "from cartograph.server.http import app\n",
            "server/http/__init__.py": "",
            "server/http/app.py": "from cartograph.server.http import serve\n",
            "server/http/serve.py": "",
        },
    )
    assert room_breaches(all_imports(package)) == [
        "cartograph.server.runtime.catalog:1 imports cartograph.server.handlers "
        "(the runtime room is below it)",
        "cartograph.server.stdio.serve:1 imports cartograph.server.http.app "
        "(only cli starts a transport)",
    ]
