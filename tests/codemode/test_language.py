"""What the pinned Monty runs, measured: the claims of `run`'s description and docs/code-mode.md.

An upgrade of pydantic-monty that adds or drops a feature fails here first;
then the description (server/tools.py) and the doc change with it.
"""

from __future__ import annotations

import pytest

from cartograph import error_codes as codes
from cartograph.server.tools import RUN_DESCRIPTION
from tests.codemode.support import run, sandbox

SUPPORTED: dict[str, tuple[str, object]] = {
    "functions and keyword-only arguments": ("def f(a, *, b=2):\n    return a + b\nf(1, b=3)", 4),
    "lambdas": ("sorted([3, 1, 2], key=lambda v: -v)", [3, 2, 1]),
    "closures with nonlocal": (
        "def c():\n    n = 0\n    def f():\n        nonlocal n\n        n += 1\n"
        "        return n\n    return f\ng = c()\ng()\ng()",
        2,
    ),
    "f-strings with format specs": ("x = 3.14159\nf'{x:.2f}|{42:>4}|{x=:.1f}'", "3.14|  42|x=3.1"),
    "comprehensions": ("{k: [i * i for i in range(v)] for k, v in [('a', 2)]}", {"a": [0, 1]}),
    "classes without inheritance": (
        "class C:\n    def __init__(self):\n        self.n = 0\n    def add(self, k):\n"
        "        self.n += k\n        return self\nC().add(2).add(3).n",
        5,
    ),
    "dataclasses": (
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nP(1) == P(1)",
        True,
    ),
    "try/except/finally": (
        "r = []\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    r.append(1)\n"
        "finally:\n    r.append(2)\nr",
        [1, 2],
    ),
    "match": ("match {'k': 1}:\n    case {'k': v}:\n        r = v\nr", 1),
    "async/await": ("async def f():\n    return 1\nawait f()", 1),
    "asyncio.gather": (
        "import asyncio\nasync def f(i):\n    return i * 2\nawait asyncio.gather(f(1), f(2))",
        [2, 4],
    ),
    "walrus": ("[y for x in range(5) if (y := x * 2) > 4]", [6, 8]),
}
UNSUPPORTED: dict[str, str] = {
    "class inheritance": "class A:\n    pass\nclass B(A):\n    pass",
    "yield": "def g():\n    yield 1\nlist(g())",
    "del": "x = [1]\ndel x[0]",
    "async with": (
        "class C:\n    async def __aenter__(self):\n        return 1\n"
        "    async def __aexit__(self, *a):\n        return False\n"
        "async def m():\n    async with C() as c:\n        return c\nawait m()"
    ),
    "async for": (
        "class A:\n    pass\nasync def m():\n    async for x in A():\n        pass\nawait m()"
    ),
    "@property": "class A:\n    @property\n    def p(self):\n        return 1\nA().p",
    "@staticmethod": "class A:\n    @staticmethod\n    def s():\n        return 1\nA.s()",
}
MODULES_OFFERED = [
    "json",
    "re",
    "math",
    "datetime",
    "collections",
    "itertools",
    "functools",
    "random",
    "time",
    "asyncio",
    "typing",
    "dataclasses",
    "decimal",
    "csv",
    "base64",
    "hashlib",
    "copy",
    "bisect",
]
MODULES_ABSENT = [
    "subprocess",
    "socket",
    "ctypes",
    "threading",
    "inspect",
    "importlib",
    "statistics",
    "string",
    "textwrap",
    "uuid",
    "heapq",
    "operator",
    "enum",
    "pickle",
    "io",
    "shutil",
]


@pytest.mark.anyio
async def test_the_python_the_description_promises_runs() -> None:
    async with sandbox() as pool:
        found = {name: await run(pool, code) for name, (code, _) in SUPPORTED.items()}
    assert {n: (r.error, r.value) for n, r in found.items()} == {
        n: (None, expected) for n, (_, expected) in SUPPORTED.items()
    }


@pytest.mark.anyio
async def test_the_python_the_description_rules_out_is_code_unsupported() -> None:
    async with sandbox() as pool:
        found = {name: await run(pool, code) for name, code in UNSUPPORTED.items()}
    assert {n: r.error.code if r.error else None for n, r in found.items()} == dict.fromkeys(
        UNSUPPORTED, codes.CODE_UNSUPPORTED
    )


@pytest.mark.anyio
async def test_the_modules_the_description_names_import_and_others_are_forbidden() -> None:
    async with sandbox() as pool:
        offered = await run(pool, "".join(f"import {m}\n" for m in MODULES_OFFERED) + "1")
        absent = {m: await run(pool, f"import {m}") for m in MODULES_ABSENT}
    assert (offered.error, offered.value) == (None, 1)
    assert {m: r.error.code if r.error else None for m, r in absent.items()} == dict.fromkeys(
        MODULES_ABSENT, codes.CODE_FORBIDDEN
    )
    assert all(m in RUN_DESCRIPTION for m in MODULES_OFFERED)
