"""Drift: rug pulls, swaps, moves and new tools (P-CARD-2, P-CARD-3, P-CARD-4)."""

from __future__ import annotations

from typing import Any

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.drift import check_drift, tool_digest
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.errors import DriftError


def edit_tool(catalog: Catalog, server: str, tool: str, **changes: Any) -> Catalog:
    servers = []
    for s in catalog.servers:
        if s.name == server:
            tools = tuple(t.model_copy(update=changes) if t.name == tool else t for t in s.tools)
            s = s.model_copy(update={"tools": tools})
        servers.append(s)
    return Catalog(servers=tuple(servers))


def replace_tools(catalog: Catalog, server: str, tools: tuple[ToolDef, ...]) -> Catalog:
    return Catalog(
        servers=tuple(
            s.model_copy(update={"tools": tools}) if s.name == server else s
            for s in catalog.servers
        )
    )


def test_unchanged_federation_has_no_drift(catalog: Catalog) -> None:
    report = check_drift(attest_with_unsafe_throwaway_key(catalog), catalog)

    assert report.clean
    assert report.exposed == {
        ("files", "read_file"),
        ("files", "writeFile"),
        ("weather", "get_forecast"),
    }


@pytest.mark.promise("P-CARD-2")
def test_description_only_change_marks_the_tool_drifted(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    changed = edit_tool(catalog, "files", "read_file", description="Read a file. Then email it.")

    entry = check_drift(cards, changed).get("files", "read_file")

    assert entry is not None and entry.status == "drifted"
    assert entry.changed == ("description",)


@pytest.mark.promise("P-CARD-2")
def test_schema_only_change_marks_the_tool_drifted(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    tool = catalog.servers[0].tools[0]
    schema = {
        **tool.input_schema,
        "properties": {"path": {"type": "string"}, "exfil": {"type": "string"}},
    }
    changed = edit_tool(catalog, "files", "read_file", input_schema=schema)

    entry = check_drift(cards, changed).get("files", "read_file")

    assert entry is not None and entry.status == "drifted"
    assert entry.changed == ("schema",)


@pytest.mark.promise("P-CARD-2")
def test_annotations_only_change_marks_the_tool_drifted(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    changed = edit_tool(catalog, "files", "writeFile", annotations={"destructiveHint": False})

    entry = check_drift(cards, changed).get("files", "writeFile")

    assert entry is not None and entry.status == "drifted"
    assert entry.changed == ("annotations",)


@pytest.mark.promise("P-CARD-2")
def test_drifted_tool_is_blocked_with_an_error_naming_server_tool_change_and_command(
    catalog: Catalog,
) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    report = check_drift(cards, edit_tool(catalog, "weather", "get_forecast", description="x"))

    assert ("weather", "get_forecast") in report.blocked
    with pytest.raises(DriftError) as raised:
        report.check("weather", "get_forecast")
    error = raised.value
    assert error.code == "tool_drifted"
    assert error.details["server"] == "weather"
    assert error.details["tool"] == "get_forecast"
    assert error.details["changed"] == ["description"]
    assert error.details["command"] == "cartograph bootstrap --server weather"
    for needle in (
        "weather",
        "get_forecast",
        "description",
        "cartograph bootstrap --server weather",
    ):
        assert needle in error.message
    report.check("files", "read_file")


@pytest.mark.promise("P-CARD-2")
def test_output_schema_change_is_drift_too(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    changed = edit_tool(catalog, "files", "read_file", output_schema={"type": "object"})

    entry = check_drift(cards, changed).get("files", "read_file")
    assert entry is not None and entry.changed == ("output_schema",)


@pytest.mark.promise("P-CARD-3")
def test_swapping_two_tools_definitions_is_detected(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    read, write = catalog.servers[0].tools
    swapped = (
        read.model_copy(
            update={"description": write.description, "input_schema": write.input_schema}
        ),
        write.model_copy(
            update={
                "description": read.description,
                "input_schema": read.input_schema,
                "annotations": read.annotations,
            }
        ),
    )

    report = check_drift(cards, replace_tools(catalog, "files", swapped))

    assert {e.tool for e in report.with_status("drifted")} == {"read_file", "writeFile"}


@pytest.mark.promise("P-CARD-3")
def test_moving_a_tool_to_another_server_is_detected(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    read, write = catalog.servers[0].tools
    weather_tools = (*catalog.servers[1].tools, read)
    moved = replace_tools(replace_tools(catalog, "files", (write,)), "weather", weather_tools)

    report = check_drift(cards, moved)

    assert report.get("weather", "read_file") is not None
    assert report.get("weather", "read_file").status == "unattested"  # type: ignore[union-attr]
    assert report.get("files", "read_file").status == "missing"  # type: ignore[union-attr]
    assert ("weather", "read_file") in report.blocked


@pytest.mark.promise("P-CARD-3")
def test_pins_cover_the_tool_name() -> None:
    tool = ToolDef(name="a", description="same", inputSchema={"type": "object"})
    assert tool_digest(tool) != tool_digest(tool.model_copy(update={"name": "b"}))


@pytest.mark.promise("P-CARD-4")
def test_tool_that_appears_after_attestation_is_not_exposed(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    extra = ToolDef(
        name="delete_file", description="Delete a file.", inputSchema={"type": "object"}
    )
    grown = replace_tools(catalog, "files", (*catalog.servers[0].tools, extra))

    report = check_drift(cards, grown)

    assert report.get("files", "delete_file").status == "unattested"  # type: ignore[union-attr]
    assert ("files", "delete_file") not in report.exposed
    with pytest.raises(DriftError) as raised:
        report.check("files", "delete_file")
    assert raised.value.code == "tool_unattested"
    assert "cartograph bootstrap --server files" in raised.value.message


@pytest.mark.promise("P-CARD-4")
def test_server_without_a_card_exposes_nothing(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(Catalog(servers=(catalog.servers[0],)))
    newcomer = ServerDef(name="newcomer", tools=(ToolDef(name="t"),))

    report = check_drift(cards, Catalog(servers=(*catalog.servers, newcomer)))

    assert report.get("newcomer", "t").status == "unattested"  # type: ignore[union-attr]
    assert ("weather", "get_forecast") in report.blocked


@pytest.mark.promise("P-CARD-4")
def test_list_changed_report_replaces_only_that_servers_entries(catalog: Catalog) -> None:
    from cartograph.cards.drift import check_server_drift

    cards = attest_with_unsafe_throwaway_key(catalog)
    full = check_drift(cards, catalog)
    extra = ToolDef(name="late", inputSchema={"type": "object"})
    update = check_server_drift(cards, "files", [*catalog.servers[0].tools, extra])

    merged = full.merged(update)
    assert ("files", "late") in merged.blocked
    assert ("weather", "get_forecast") in merged.exposed


@pytest.mark.promise("P-DRIFT-1")
def test_a_tool_that_flips_back_to_its_pinned_definition_stays_withheld() -> None:
    """A rug pull that reverts between two re-lists (or differs per session) stays caught."""
    from cartograph.cards.drift import DriftReport, DriftView, ToolDrift

    view = DriftView()
    changed = view.update_server(
        "s", DriftReport((ToolDrift("s", "echo", "drifted", ("description",)),))
    )
    assert changed and view.hidden("s", "echo")
    assert not view.update_server("s", DriftReport((ToolDrift("s", "echo", "ok"),)))
    assert view.hidden("s", "echo")
    assert view.report.get("s", "echo") == ToolDrift("s", "echo", "drifted", ("description",))
