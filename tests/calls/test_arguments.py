"""Meta-call repair and argument validation, before any upstream I/O (P-TOOL-1)."""

from __future__ import annotations

import json

import pytest

from cartograph.calls.arguments import repair_meta_call, validate_arguments
from cartograph.errors import ArgumentError

KNOWN = {("github", "search_repos"), ("fs", "read_file")}


def known(server: str, tool: str) -> bool:
    return (server, tool) in KNOWN


def test_well_formed_call_passes_unchanged_with_no_repairs() -> None:
    meta = repair_meta_call(
        {"server": "fs", "tool": "read_file", "arguments": {"path": "a"}}, known
    )
    assert (meta.server, meta.tool, meta.arguments, meta.repairs) == (
        "fs",
        "read_file",
        {"path": "a"},
        (),
    )


def test_arguments_given_as_a_json_string_are_parsed_and_reported() -> None:
    meta = repair_meta_call(
        {"server": "fs", "tool": "read_file", "arguments": json.dumps({"path": "a"})}, known
    )
    assert meta.arguments == {"path": "a"}
    assert any("JSON string" in r for r in meta.repairs)


def test_nested_arguments_arguments_is_unwrapped() -> None:
    meta = repair_meta_call(
        {"server": "fs", "tool": "read_file", "arguments": {"arguments": {"path": "a"}}}, known
    )
    assert meta.arguments == {"path": "a"}
    assert meta.repairs


def test_whole_call_nested_inside_arguments_is_unwrapped() -> None:
    inner = {"server": "fs", "tool": "read_file", "arguments": {"path": "a"}}
    meta = repair_meta_call({"arguments": inner}, known)
    assert (meta.server, meta.tool, meta.arguments) == ("fs", "read_file", {"path": "a"})


@pytest.mark.parametrize("combined", ["github/search_repos", "github.search_repos"])
def test_server_and_tool_in_one_field_are_split_when_unambiguous(combined: str) -> None:
    meta = repair_meta_call({"tool": combined, "arguments": {"q": "x"}}, known)
    assert (meta.server, meta.tool) == ("github", "search_repos")
    assert meta.repairs


def test_a_combined_name_that_matches_no_known_tool_is_refused_with_an_example() -> None:
    with pytest.raises(ArgumentError) as caught:
        repair_meta_call({"tool": "nothing/here", "arguments": {}}, known)
    assert caught.value.code == "bad_meta_call"
    assert json.loads(caught.value.details["example"])["arguments"] == {}


def test_arguments_that_are_a_non_json_string_are_refused() -> None:
    with pytest.raises(ArgumentError) as caught:
        repair_meta_call({"server": "fs", "tool": "read_file", "arguments": "path=a"}, known)
    assert caught.value.code == "bad_meta_call"


def test_top_level_tool_arguments_are_moved_into_arguments() -> None:
    meta = repair_meta_call({"server": "fs", "tool": "read_file", "path": "a"}, known)
    assert meta.arguments == {"path": "a"}


def test_extra_keys_beside_arguments_are_ambiguous_and_refused() -> None:
    with pytest.raises(ArgumentError) as caught:
        repair_meta_call({"server": "fs", "tool": "read_file", "arguments": {}, "path": "a"}, known)
    assert caught.value.code == "bad_meta_call"


@pytest.mark.promise("P-TOOL-1")
def test_invalid_arguments_are_refused_with_the_expected_schema_shown() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    with pytest.raises(ArgumentError) as caught:
        validate_arguments("s", "t", schema, {"n": "three"}, example={"n": 3})
    assert caught.value.code == "bad_arguments"
    assert json.dumps(schema, separators=(",", ":")) in caught.value.message
    assert caught.value.details["schema"] == schema


def test_valid_arguments_pass() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    validate_arguments("s", "t", schema, {"n": 3})
