"""The trees a side-by-side benchmark compares, as its command line names them.

    --src NAME=PATH     another checkout's ``src`` folder, measured as NAME (repeatable)
    --python NAME=EXE   the interpreter for --src NAME, one whose environment was built
                        from that tree's own lock (repeatable)

``first_answer.py``, ``serving_scale.py`` and ``discover_latency.py`` take both and
``blink.py`` hands both on to its children. The options are declared here once and
read here once, so the scripts cannot drift apart in what they accept or how they
refuse it. What a benchmark does with its trees (whether this checkout is one of
them, how a child finds a tree's code) stays the benchmark's own.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

SRC_HELP: Final = "NAME=PATH to a src folder"
PYTHON_HELP: Final = "NAME=EXE: the interpreter for --src NAME (its own environment)"


def add_tree_options(parser: argparse.ArgumentParser, python_help: str = PYTHON_HELP) -> None:
    """``--src`` and ``--python``: each repeatable, each read as a list of ``NAME=VALUE``."""
    parser.add_argument("--src", action="append", default=[], help=SRC_HELP)
    parser.add_argument("--python", action="append", default=[], help=python_help)


def sources_from(specs: Sequence[str]) -> dict[str, Path]:
    """``--src NAME=PATH`` as NAME → the folder, resolved; a spec without a path is refused."""
    sources: dict[str, Path] = {}
    for spec in specs:
        name, _, path = spec.partition("=")
        if not path:
            raise SystemExit(f"--src wants NAME=PATH, got {spec!r}")
        sources[name] = Path(path).resolve()
    return sources


def sources_or_bare(specs: Sequence[str]) -> dict[str, Path | None]:
    """``--src`` where a bare NAME (no path) stands for the code this interpreter imports.

    ``serving_scale.py`` reads its trees so: such a NAME is measured with this
    interpreter's own path, and no ``--python`` can name it.
    """
    sources: dict[str, Path | None] = {}
    for spec in specs:
        name, _, path = spec.partition("=")
        sources[name] = Path(path).resolve() if path else None
    return sources


def interpreters_from(
    specs: Sequence[str],
    sources: Mapping[str, Path | None],
    src_form: str = "--src NAME=PATH",
) -> dict[Path, str]:
    """``--python NAME=EXE`` as the tree's folder → its interpreter.

    Refused where NAME is no tree with a folder in ``sources`` or EXE is missing;
    ``src_form`` is how the refusal spells the ``--src`` it wanted.
    """
    pythons: dict[Path, str] = {}
    for spec in specs:
        name, _, exe = spec.partition("=")
        src = sources.get(name)
        if src is None or not exe:
            raise SystemExit(f"--python wants NAME=EXE for a {src_form}, got {spec!r}")
        pythons[src] = exe
    return pythons


def tree_args(sources: Sequence[str], pythons: Sequence[str]) -> list[str]:
    """The options again, as they are, for a child benchmark that reads them itself."""
    return [*(f"--src={s}" for s in sources), *(f"--python={p}" for p in pythons)]


def column_head(names: Sequence[str]) -> list[str]:
    """The first two lines of a markdown table with a column per tree."""
    return ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
