from __future__ import annotations

from typing import Any

import pytest

from cartograph.stubs.naming import Namespace
from cartograph.stubs.typemap import TypeMapper, resolve_pointer


def expr(schema: Any) -> str:
    return TypeMapper(Namespace()).map_root(schema, ("t",)).expr


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "null"}, "None"),
        ({"type": ["string", "null"]}, "str | None"),
        ({"type": "string", "nullable": True}, "str | None"),
        ({"enum": ["a", "b"]}, 'Literal["a", "b"]'),
        ({"enum": [1, "two", True, None]}, 'Literal[1, "two", True] | None'),
        ({"enum": [0.5, 1.5]}, "float"),
        ({"const": "x"}, 'Literal["x"]'),
        ({"type": "array", "items": {"type": "integer"}}, "list[int]"),
        ({"type": "array"}, "list[Any]"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"type": "object", "additionalProperties": {"type": "number"}}, "dict[str, float]"),
        (
            {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            "str | int | None",
        ),
        ({"oneOf": [{"type": "null"}, {"type": "string"}]}, "str | None"),
        ({"anyOf": [{"type": "number"}, {"not": {}}]}, "float"),
        ({"anyOf": [{"type": "number"}, {}]}, "Any"),
        ({}, "Any"),
        (True, "Any"),
        ({"$ref": "https://example.com/remote.json"}, "Any"),
    ],
)
def test_schema_maps_to_python_type(schema: Any, expected: str) -> None:
    assert expr(schema) == expected


def test_object_becomes_typed_dict_with_required_first_then_optional_sorted() -> None:
    mapper = TypeMapper(Namespace())
    schema = {
        "type": "object",
        "properties": {"z": {"type": "string"}, "b": {"type": "integer"}, "a": {"type": "string"}},
        "required": ["b"],
    }
    assert mapper.map_root(schema, ("tool", "arg")).expr == "ToolArg"
    (td,) = mapper.typed_dicts
    assert [(f.key, f.type.expr, f.required) for f in td.fields] == [
        ("b", "int", True),
        ("a", "str", False),
        ("z", "str", False),
    ]


def test_recursive_ref_reuses_one_typed_dict() -> None:
    mapper = TypeMapper(Namespace())
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    assert mapper.map_root(schema, ("tree",)).expr == "Tree"
    (td,) = mapper.typed_dicts
    assert {f.key: f.type.expr for f in td.fields}["children"] == "list[Tree]"


def test_defs_ref_takes_the_definition_name() -> None:
    mapper = TypeMapper(Namespace())
    schema = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/Point"}, "q": {"$ref": "#/$defs/Point"}},
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
    }
    mapper.map_root(schema, ("t",))
    assert [td.name for td in mapper.typed_dicts] == ["Point", "T"]


def test_all_of_objects_merge_properties_and_required() -> None:
    mapper = TypeMapper(Namespace())
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}},
        ]
    }
    mapper.map_root(schema, ("m",))
    (td,) = mapper.typed_dicts
    assert [(f.key, f.required) for f in td.fields] == [("a", True), ("b", False)]


def test_false_property_is_dropped() -> None:
    mapper = TypeMapper(Namespace())
    mapper.map_root({"type": "object", "properties": {"a": {"type": "string"}, "b": False}}, ("t",))
    assert [f.key for f in mapper.typed_dicts[0].fields] == ["a"]


def test_json_pointer_resolution_unescapes_tokens() -> None:
    root = {"properties": {"a/b": {"type": "string"}, "c~d": [0, {"type": "integer"}]}}
    assert resolve_pointer(root, "#/properties/a~1b") == {"type": "string"}
    assert resolve_pointer(root, "#/properties/c~0d/1") == {"type": "integer"}
    assert resolve_pointer(root, "#/properties/missing") is None
    assert resolve_pointer(root, "other.json#/x") is None
