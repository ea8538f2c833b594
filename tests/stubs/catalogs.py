"""Catalogs with awkward schemas and names, for stub generation tests.

The colliding names here are distinct under P-NAME-1 (which folds case,
width and the separators ``-``, ``_``, ``.`` and whitespace, and so refuses
``get-weather`` beside ``get_weather`` at load) but fold to one Python
identifier: accents and punctuation such as ``#`` or ``/`` survive P-NAME-1
and vanish in an identifier. The stubs namer must keep them apart.
"""

from __future__ import annotations

from typing import Any

from cartograph.catalog.model import Catalog, ServerDef, ToolDef

PUBLISHER_CANARY = "publisher-annotation-canary-91c4"


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required is not None:
        schema["required"] = required
    return schema


def tool(name: str, schema: dict[str, Any], **extra: Any) -> ToolDef:
    return ToolDef.model_validate(
        {
            "name": name,
            "description": f"The {name} tool does its job.",
            "inputSchema": schema,
            **extra,
        }
    )


AWKWARD_NAMES = tool(
    "get-weather",
    obj(
        {
            "city": {"type": "string"},
            "units": {"type": "string", "enum": ["c", "f"], "default": "c"},
            "days": {"type": "integer", "default": 3},
            "9lives": {"type": "boolean"},
            "from": {"type": "string"},
            "class": {"type": "number"},
            "a-b": {"type": "string"},
            "a_b": {"type": "string"},
            "_private": {"type": "string"},
            "str": {"type": "string"},
            "list": {"type": "array", "items": {"type": "string"}},
            "SERVER": {"type": "string"},
            "arguments": {"type": "string"},
            "名字": {"type": "string"},
            'it\'s "quoted"': {"type": "string"},
            "bad-default": {"type": "integer", "default": "seven"},
            "float-default": {"type": "integer", "default": 2.5},
        },
        ["city"],
        title=PUBLISHER_CANARY,
        examples=[{"city": PUBLISHER_CANARY}],
    ),
)

SHAPES = tool(
    "shapes",
    obj(
        {
            "point": obj({"x": {"type": "number"}, "y": {"type": "number"}}, ["x", "y"]),
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "tree": {"$ref": "#/$defs/Node"},
            "merged": {
                "allOf": [obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "integer"}})]
            },
            "choice": {
                "oneOf": [
                    obj({"kind": {"const": "circle"}, "r": {"type": "number"}}, ["kind"]),
                    obj({"kind": {"const": "square"}, "side": {"type": "number"}}, ["kind"]),
                ]
            },
            "scalar": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            "ratio": {"enum": [0.5, 1.5]},
            "mixed": {"enum": [1, "two", True, None]},
            "legacy": {"type": "string", "nullable": True},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            "maybe": {"type": ["string", "null"]},
            "impossible": {"anyOf": [{"type": "number"}, {"not": {}}]},
            "never": False,
            "anything": {},
            "empty-enum": {"enum": []},
            "remote": {"$ref": "https://example.com/schema.json"},
            "note": {
                "type": "string",
                "x-vendor": PUBLISHER_CANARY,
                "examples": [PUBLISHER_CANARY],
            },
        },
        ["point"],
        **{
            "$defs": {
                "Node": obj(
                    {
                        "label": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    ["label"],
                )
            }
        },
    ),
)

OUTPUT = tool(
    "structured",
    obj({"q": {"type": "string"}}, ["q"]),
    outputSchema=obj(
        {
            "hits": {"type": "array", "items": obj({"id": {"type": "integer"}}, ["id"])},
            "next": {"type": ["string", "null"]},
        },
        ["hits"],
    ),
)

EDGE_TOOLS = (
    tool("gét/weather", obj({})),  # the identifier get_weather, as for get-weather
    tool("list", obj({})),  # would shadow the builtin used in annotations
    tool("class", obj({})),  # keyword
    tool("9to5", obj({})),  # leading digit
    tool("SERVER", obj({})),  # the module's own constant
    tool("Literal", obj({})),  # an imported typing name
    tool("free-form", {"type": "object"}),
    tool("map-only", {"type": "object", "additionalProperties": {"type": "integer"}}),
    tool(
        "top-anyof",
        {"anyOf": [obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "string"}}, ["b"])]},
    ),
    tool("ShapesPoint", obj({})),  # collides with a generated TypedDict name
)


def awkward_catalog() -> Catalog:
    servers = (
        ServerDef(name="Awkward-Server 1", tools=(AWKWARD_NAMES, SHAPES, OUTPUT, *EDGE_TOOLS)),
        ServerDef(name="awkward server #1", tools=(tool("ping", obj({})),)),  # same module name
        ServerDef(name="鸣潮", tools=(tool("状态", obj({})),)),  # no ASCII at all
        ServerDef(name="import", tools=(tool("ping", obj({})),)),  # keyword module name
    )
    return Catalog(servers=servers)
