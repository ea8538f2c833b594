"""The ``run`` proxy tool over real upstreams: every inner call takes the ``call`` tool's path.

The catalog runs the scriptable ``notes`` server (read-only tools and one
write) and, where a test needs drift or denial, the ``faults`` set; programs
run in real Monty workers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult

from cartograph import error_codes as codes
from cartograph.config.model import CatalogPolicy
from cartograph.gateway.audit import AuditRecord, kept_records
from cartograph.server.handlers import ProxyHandlers
from tests.codemode.support import code_mode, notes, run_tool
from tests.helpers.support import config_for, scriptable
from tests.server.support import call, code, text, until_drift

WORDS_OF_TWO_NOTES = """
names = (await notes.list_notes())["notes"]
first = await notes.read_note(names[0])
second = await notes.read_note(name=names[1])
counted = await notes.word_count(text=first + " " + second)
print(f"{len(names)} notes")
{"notes": names[:2], "words": counted["words"]}
"""


def structured(result: CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def run_records(handlers: ProxyHandlers, result: CallToolResult) -> list[AuditRecord]:
    run_id = structured(result)["run"]
    return [r for r in kept_records(handlers.audit) if r.trace and run_id in r.trace]


@pytest.mark.anyio
async def test_run_is_listed_only_where_code_mode_is_on(tmp_path: Path) -> None:
    async with code_mode(tmp_path / "on", notes()) as on:
        assert [t.name for t in on.list_tools()] == ["discover", "status", "call", "run"]
        assert "`run` runs a program" in on.instructions()
    from cartograph.server.runtime.catalog import CatalogRuntime

    config = config_for(tmp_path / "off", notes())
    runtime = await CatalogRuntime.start(config, config.servers, unsafe_throwaway_key=True)
    try:
        off = ProxyHandlers(runtime, catalog="default")
        assert [t.name for t in off.list_tools()] == ["discover", "status", "call"]
        refused = await run_tool(off, "1")
        assert code(refused) == codes.UNKNOWN_PROXY_TOOL
    finally:
        await runtime.aclose()


@pytest.mark.anyio
async def test_a_program_calls_real_tools_and_only_its_value_and_prints_come_back(
    tmp_path: Path,
) -> None:
    async with code_mode(tmp_path, notes()) as h:
        result = await run_tool(h, WORDS_OF_TWO_NOTES)
    assert not result.is_error, text(result)
    reply = structured(result)
    assert reply["value"] == {"notes": ["alpha", "beta"], "words": 5}
    assert reply["printed"] == "3 notes\n"
    assert [line.rsplit(" ", 2)[0] for line in reply["calls"]] == [
        "notes/list_notes ok",
        "notes/read_note ok",
        "notes/read_note ok",
        "notes/word_count ok",
    ]
    assert "one two three" not in text(result)  # intermediate results stay in the sandbox


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-2")
async def test_every_inner_call_leaves_one_audit_record_carrying_the_run_id(
    tmp_path: Path,
) -> None:
    async with code_mode(tmp_path, notes()) as h:
        result = await run_tool(h, WORDS_OF_TWO_NOTES + "\nawait discover('count words', 2)\n1")
        records = run_records(h, result)
    assert [(r.proxy_tool, r.tool, r.outcome) for r in records] == [
        ("call", "list_notes", "ok"),
        ("call", "read_note", "ok"),
        ("call", "read_note", "ok"),
        ("call", "word_count", "ok"),
        ("discover", None, "ok"),
        ("run", None, "ok"),
    ]
    assert len({r.trace for r in records}) == 1
    assert records[-1].arguments == {"code": "string"}  # the shape, never the program


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-1")
async def test_a_tool_not_marked_read_only_is_refused_from_code_before_any_io(
    tmp_path: Path,
) -> None:
    program = "await notes.write_note(name='x', text='y')"
    async with code_mode(tmp_path, notes()) as h:
        refused = await run_tool(h, program)
        caught = await run_tool(
            h, f"try:\n    {program}\nexcept PermissionError as e:\n    r = str(e)\nr"
        )
        writes = text(await call(h, "notes", "writes"))
        inner = [r for r in run_records(h, refused) if r.proxy_tool == "call"]
    assert code(refused) == codes.CODE_WRITE_DENIED
    assert structured(refused)["calls"] == ["notes/write_note code_write_denied 0 ms"]
    assert structured(caught)["value"].startswith("[code_write_denied] notes/write_note")
    assert (writes, inner) == ("0", [])


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-1")
@pytest.mark.promise("P-CODE-2")
async def test_an_allowed_write_runs_with_one_audit_record_per_inner_call(tmp_path: Path) -> None:
    program = "for i in range(3):\n    await notes.write_note(name=f'n{i}', text='t')\n'done'"
    async with code_mode(tmp_path, notes(), allow_writes=("notes/write_*",)) as h:
        result = await run_tool(h, program)
        writes = text(await call(h, "notes", "writes"))
        records = run_records(h, result)
    assert (structured(result)["value"], writes) == ("done", "3")
    assert [(r.proxy_tool, r.tool) for r in records] == [("call", "write_note")] * 3 + [
        ("run", None)
    ]


@pytest.mark.anyio
async def test_the_inner_call_cap_ends_the_run_with_code_call_limit(tmp_path: Path) -> None:
    program = (
        "n = 0\nfor i in range(10):\n    try:\n        await notes.list_notes()\n"
        "        n += 1\n    except RuntimeError:\n        pass\nn"
    )
    async with code_mode(tmp_path, notes(), max_calls=3) as h:
        result = await run_tool(h, program)
        records = run_records(h, result)
    assert code(result) == codes.CODE_CALL_LIMIT
    assert [r.proxy_tool for r in records] == ["call", "call", "call", "run"]
    assert records[-1].outcome == codes.CODE_CALL_LIMIT


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-1")
async def test_arguments_are_validated_against_the_card_before_the_upstream_sees_them(
    tmp_path: Path,
) -> None:
    async with code_mode(tmp_path, notes()) as h:
        result = await run_tool(h, "await notes.read_note(name=3)")
        guard = h.runtime.gateway.guard("notes")
    assert code(result) == codes.BAD_ARGUMENTS
    assert structured(result)["error"]["line"] == 1
    assert guard.calls == 0


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-1")
async def test_a_tool_the_catalog_policy_denies_is_neither_a_function_nor_callable(
    tmp_path: Path,
) -> None:
    policy = CatalogPolicy(deny=("notes/read_note",))
    async with code_mode(tmp_path, notes(), policy=policy) as h:
        missing = await run_tool(h, "await notes.read_note(name='alpha')")
        denied = await run_tool(h, "await call('notes', 'read_note', {'name': 'alpha'})")
    assert code(missing) == codes.CODE_ERROR
    assert "has no tool function 'read_note'" in text(missing)
    assert code(denied) == codes.TOOL_DENIED


@pytest.mark.anyio
@pytest.mark.promise("P-CODE-1")
async def test_a_drifted_tool_is_not_callable_from_code(tmp_path: Path) -> None:
    async with code_mode(tmp_path, scriptable("srv"), allow_writes=("srv/*",)) as h:
        before = await run_tool(h, "await srv.echo(text='hi')")
        assert structured(before)["value"] == {"echo": "hi"}
        await call(h, "srv", "mutate")
        await until_drift(
            h, lambda: getattr(h.runtime.drift.get("srv", "echo"), "status", "") == "drifted"
        )
        as_function = await run_tool(h, "await srv.echo(text='hi')")
        by_name = await run_tool(h, "await call('srv', 'echo', {'text': 'hi'})")
    assert "has no tool function 'echo'" in text(as_function)
    assert code(by_name) == codes.TOOL_DRIFTED


@pytest.mark.anyio
async def test_gathered_calls_run_concurrently_up_to_the_run_s_parallel_limit(
    tmp_path: Path,
) -> None:
    program = (
        "import asyncio\n"
        "rs = await asyncio.gather(*[notes.slow(seconds=1.0) for _ in range(6)])\nlen(rs)"
    )
    async with code_mode(tmp_path, notes(), max_parallel_calls=3) as h:
        started = time.perf_counter()
        result = await run_tool(h, program)
        elapsed = time.perf_counter() - started
    assert structured(result)["value"] == 6
    assert 2.0 <= elapsed < 4.5  # two waves of three: not one wave (1 s), not six in a row (6 s)


@pytest.mark.anyio
async def test_discover_shows_each_tool_as_a_program_calls_it(tmp_path: Path) -> None:
    async with code_mode(tmp_path, notes()) as h:
        found = await h.call_tool(
            "discover", {"task": "read or write a note", "k": 6}, principal=None
        )
        entries = {e["tool"]: e["code"] for e in structured(found)["tools"]}
        written = entries["read_note"].removeprefix("await ").replace("name: str", "name='beta'")
        ran = await run_tool(h, f"await {written.split(' ->')[0]}")
    assert entries["read_note"] == "await notes.read_note(name: str)"
    assert entries["word_count"] == "await notes.word_count(text: str) -> dict"
    assert entries["write_note"].endswith("# not read-only: refused in programs")
    assert "In run programs:\n- await notes." in text(found)
    assert structured(ran)["value"] == "four five"
