"""The sandbox on its own: real Monty workers, each limit and refusal with its code.

Hostile programs are named after what they try; each must end with its code
within its limit, and the pool must go on serving the next run.
"""

from __future__ import annotations

import os
import signal
import time

import anyio
import pytest
from mcp.types import CallToolResult, TextContent

from cartograph import error_codes as codes
from cartograph.codemode import Sandbox, check_request
from cartograph.config.model import CodeModeConfig
from cartograph.errors import CodeError
from tests.codemode.support import HostFunctions, monty_workers, run, sandbox

WALL: float = 1.0
SLACK: float = 3.0
"""How far past its limit a refusal may come on a loaded two-core machine."""

HOSTILE: list[tuple[str, str, str]] = [
    ("infinite_loop", "while True:\n    pass", codes.CODE_TIMEOUT),
    ("memory_bomb", "x = 'a' * (10**9)", codes.CODE_MEMORY_LIMIT),
    ("growing_list", "x = []\nwhile True:\n    x.append([0] * 1000)", codes.CODE_MEMORY_LIMIT),
    ("huge_integer", "10 ** (10**8)", codes.CODE_MEMORY_LIMIT),
    ("deep_recursion", "def f(n):\n    return f(n + 1)\nf(0)", codes.CODE_RECURSION_LIMIT),
    ("long_sleep", "import time\ntime.sleep(3600)", codes.CODE_TIMEOUT),
    ("import_os_listdir", "import os\nos.listdir('/')", codes.CODE_FORBIDDEN),
    ("os_environ", "import os\nos.environ['HOME']", codes.CODE_FORBIDDEN),
    ("os_system", "import os\nos.system('id')", codes.CODE_FORBIDDEN),
    ("open_passwd", "open('/etc/passwd').read()", codes.CODE_FORBIDDEN),
    ("write_file", "open('/tmp/cartograph-pwned', 'w').write('x')", codes.CODE_FORBIDDEN),
    (
        "pathlib_read",
        "from pathlib import Path\nPath('/etc/hosts').read_text()",
        codes.CODE_FORBIDDEN,
    ),
    ("dunder_import", "__import__('os')", codes.CODE_FORBIDDEN),
    ("eval_dunder_import", "eval(\"__import__('os')\")", codes.CODE_FORBIDDEN),
    ("import_socket", "import socket", codes.CODE_FORBIDDEN),
    ("import_subprocess", "import subprocess", codes.CODE_FORBIDDEN),
    ("import_ctypes", "import ctypes", codes.CODE_FORBIDDEN),
    ("subclasses_walk", "().__class__.__bases__[0].__subclasses__()", codes.CODE_FORBIDDEN),
    ("function_globals", "(lambda: 0).__globals__", codes.CODE_FORBIDDEN),
    ("type_subclasses", "type(1).__subclasses__()", codes.CODE_FORBIDDEN),
    ("builtins_module", "__builtins__", codes.CODE_FORBIDDEN),
    ("globals_call", "globals()", codes.CODE_FORBIDDEN),
    ("sys_modules", "import sys\nsys.modules", codes.CODE_FORBIDDEN),
]


@pytest.mark.anyio
async def test_a_program_prints_and_returns_its_last_expression_as_json() -> None:
    async with sandbox() as pool:
        report = await run(
            pool,
            "squares = [i * i for i in range(5)]\nprint(f'{len(squares)} squares')\n"
            "{'sum': sum(squares), 'pair': (1, 2), 'seen': {3}, 'raw': b'x', 'n': inputs['n']}",
            inputs={"n": 7},
        )
    assert report.error is None
    assert report.printed == "5 squares\n"
    assert report.value == {
        "sum": 30,
        "pair": [1, 2],
        "seen": [3],
        "raw": {"bytes_base64": "eA=="},
        "n": 7,
    }


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-3")
@pytest.mark.parametrize(("attack", "code", "expected"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_a_hostile_program_gets_its_code_within_its_limit_and_the_pool_serves_on(
    attack: str, code: str, expected: str
) -> None:
    async with sandbox() as pool:
        started = time.perf_counter()
        report = await run(pool, code, wall_time=WALL, max_memory=32 * 1024 * 1024)
        elapsed = time.perf_counter() - started
        assert report.error is not None, attack
        assert (report.error.code, report.value) == (expected, None)
        assert elapsed < WALL + SLACK
        after = await run(pool, "6 * 7")
    assert (after.error, after.value) == (None, 42)


@pytest.mark.anyio
async def test_a_syntax_error_names_its_line_and_column() -> None:
    async with sandbox() as pool:
        report = await run(pool, "x = 1\ndef (:\n")
    assert report.error is not None
    assert report.error.code == codes.CODE_SYNTAX
    assert (report.error.details["line"], report.error.details["column"]) == (2, 5)


@pytest.mark.anyio
async def test_an_uncaught_exception_is_code_error_with_the_program_s_line() -> None:
    async with sandbox() as pool:
        report = await run(pool, "def check(v):\n    raise ValueError(f'bad {v}')\n\ncheck(3)")
    assert report.error is not None
    assert report.error.code == codes.CODE_ERROR
    assert "ValueError: bad 3" in report.error.message
    assert report.error.details == {"line": 2, "column": 11, "function": "check"}


@pytest.mark.anyio
async def test_python_the_sandbox_lacks_is_code_unsupported() -> None:
    async with sandbox() as pool:
        report = await run(pool, "class Base:\n    pass\nclass Child(Base):\n    pass")
    assert report.error is not None
    assert report.error.code == codes.CODE_UNSUPPORTED


@pytest.mark.anyio
async def test_a_program_cannot_forge_an_inner_call_s_refusal_code() -> None:
    async with sandbox() as pool:
        report = await run(pool, "raise PermissionError('[tool_denied] not really')")
    assert report.error is not None
    assert report.error.code == codes.CODE_ERROR


@pytest.mark.anyio
async def test_a_value_over_the_output_budget_is_refused_and_print_output_is_cut() -> None:
    async with sandbox() as pool:
        big = await run(pool, "'x' * 5000", max_output_bytes=1024)
        chatty = await run(
            pool, "for i in range(500):\n    print('line', i)\n1", max_output_bytes=1024
        )
    assert big.error is not None and big.error.code == codes.CODE_OUTPUT_TOO_LARGE
    assert chatty.error is None
    kept = chatty.printed.split("\n[…")[0]
    assert len(kept.encode()) <= 1024
    assert "more bytes of output not kept]" in chatty.printed


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-3")
async def test_a_worker_killed_mid_run_is_code_crashed_and_the_next_run_works() -> None:
    async def kill_my_worker(
        server: str, tool: str, arguments: dict[str, object]
    ) -> CallToolResult:
        (worker,) = set(monty_workers()) - before  # this sandbox's only worker
        os.kill(worker, signal.SIGKILL)  # the program resumes into a dead worker
        return CallToolResult(content=[TextContent(text="killed")])

    before = set(monty_workers())  # other tests' pools may still be winding down
    async with sandbox() as pool:
        report = await run(
            pool, "await call('host', 'kill')\n1", federation=HostFunctions(kill_my_worker)
        )
        assert report.error is not None and report.error.code == codes.CODE_CRASHED
        after = await run(pool, "sum(range(4))")
    assert (after.error, after.value) == (None, 6)


@pytest.mark.anyio
async def test_the_deadline_covers_inner_calls_and_cancels_the_one_in_flight() -> None:
    cancelled = anyio.Event()

    async def hang(server: str, tool: str, arguments: dict[str, object]) -> CallToolResult:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async with sandbox() as pool:
        started = time.perf_counter()
        report = await run(
            pool, "await call('host', 'hang')", federation=HostFunctions(hang), wall_time=WALL
        )
        elapsed = time.perf_counter() - started
    assert report.error is not None and report.error.code == codes.CODE_TIMEOUT
    assert elapsed < WALL + SLACK
    with anyio.fail_after(5):
        await cancelled.wait()


@pytest.mark.anyio
async def test_a_call_the_program_never_awaited_ends_with_the_run() -> None:
    started = anyio.Event()
    ended = anyio.Event()

    async def slow(server: str, tool: str, arguments: dict[str, object]) -> CallToolResult:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            ended.set()
        return CallToolResult(content=[TextContent(text="late")])

    async with sandbox() as pool:
        report = await run(pool, "call('host', 'slow')\n'done'", federation=HostFunctions(slow))
    assert (report.error, report.value) == (None, "done")
    with anyio.fail_after(5):
        await ended.wait()


@pytest.mark.anyio
async def test_a_run_that_finds_every_worker_busy_past_its_deadline_is_code_busy() -> None:
    held = anyio.Event()
    release = anyio.Event()

    async def hold(server: str, tool: str, arguments: dict[str, object]) -> CallToolResult:
        held.set()
        await release.wait()
        return CallToolResult(content=[TextContent(text="held")])

    async def first(pool: Sandbox) -> None:
        await run(pool, "await call('host', 'hold')", federation=HostFunctions(hold))

    async with sandbox(workers=1) as pool, anyio.create_task_group() as group:
        group.start_soon(first, pool)
        with anyio.fail_after(10):
            await held.wait()  # the first run holds the only worker
        report = await run(pool, "1", wall_time=WALL)
        release.set()
    assert report.error is not None and report.error.code == codes.CODE_BUSY


@pytest.mark.parametrize(
    ("code", "inputs", "expected"),
    [
        ("", None, codes.CODE_BAD_INPUTS),
        (42, None, codes.CODE_BAD_INPUTS),
        ("x" * 101, None, codes.CODE_TOO_LONG),
        ("1", ["not", "an", "object"], codes.CODE_BAD_INPUTS),
    ],
)
def test_a_malformed_request_is_refused_before_any_sandbox_work(
    code: object, inputs: object, expected: str
) -> None:
    with pytest.raises(CodeError) as refused:
        check_request(code, inputs, CodeModeConfig(max_code_chars=100))
    assert refused.value.code == expected
