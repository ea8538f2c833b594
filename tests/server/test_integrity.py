"""Every `call` re-checks the card entry it serves; a tampered one never reaches the upstream."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.support import scriptable
from tests.server.support import call, code, running, text


@pytest.mark.anyio
@pytest.mark.promise("P-SIG-3")
async def test_a_card_mutated_in_memory_is_caught_before_the_call_is_served(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("calc")) as h:
        assert text(await call(h, "calc", "add", a=1, b=2)) == "3"
        add = h.runtime.cards["calc"].body.tool("add")
        assert add is not None
        object.__setattr__(add, "input_schema", {"type": "object"})

        refused = await call(h, "calc", "add", a="anything", b=2)

        assert code(refused) == "card_not_intact"
        assert h.runtime.gateway.guard("calc").calls == 1  # the refused call never went out


@pytest.mark.anyio
@pytest.mark.promise("P-SIG-3")
async def test_a_schema_loosened_in_place_after_the_validator_was_cached_is_caught(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, scriptable("calc")) as h:
        assert code(await call(h, "calc", "add", a="one", b=2)) == "bad_arguments"
        add = h.runtime.cards["calc"].body.tool("add")
        assert add is not None
        add.input_schema["properties"]["a"]["type"] = "string"

        assert code(await call(h, "calc", "add", a="one", b=2)) == "card_not_intact"


@pytest.mark.anyio
async def test_each_tool_schema_is_compiled_once_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cartograph.calls.arguments as arguments_module

    compiled: list[str] = []
    from cartograph.calls.arguments import compile_validator as real

    def counting(schema: object) -> object:
        compiled.append(str(schema))
        return real(schema)  # type: ignore[arg-type]

    monkeypatch.setattr(arguments_module, "compile_validator", counting)
    async with running(tmp_path, scriptable("calc")) as h:
        for _ in range(3):
            assert text(await call(h, "calc", "add", a=1, b=2)) == "3"
        assert code(await call(h, "calc", "add", a="x", b=2)) == "bad_arguments"
        assert text(await call(h, "calc", "echo", text="hi")) == "hi"
    assert len(compiled) == 2  # add once, echo once
