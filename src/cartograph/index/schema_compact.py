"""Input schemas rendered compactly but losslessly for the arguments.

An agent needs every argument's name, type, constraints, default, enum and
description, and which arguments are required. It does not need JSON Schema
boilerplate that changes nothing about a valid call: ``$schema``, a
``title`` that only repeats the property name, or ``additionalProperties:
false`` on the top-level object whose properties are all listed (the agent
should send only listed arguments anyway; ``call`` validates against the full
schema). Everything else is kept as is, nested schemas included.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

_NOISE_KEYS: Final = frozenset({"$schema"})
_WORD = re.compile(r"[^a-z0-9]")


def compact_schema(schema: dict[str, Any], *, tool: str | None = None) -> dict[str, Any]:
    """A copy of ``schema`` without noise (see module docstring); input untouched.

    With ``tool``, a root title that only restates the tool's name (SDKs emit
    ``"<tool>Arguments"``) is dropped too.
    """
    out = _compact(schema, name=None)
    title = out.get("title")
    if tool is not None and isinstance(title, str) and _restates_tool(title, tool):
        del out["title"]
    if out.get("additionalProperties") is False and "properties" in out:
        del out["additionalProperties"]
    return out


def _compact(node: dict[str, Any], *, name: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NOISE_KEYS:
            continue
        if key == "title" and isinstance(value, str) and _repeats(value, name):
            continue
        out[key] = _child(key, value)
    return out


def _child(key: str, value: Any) -> Any:
    if key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(
        value, dict
    ):
        return {k: _compact(v, name=k) if isinstance(v, dict) else v for k, v in value.items()}
    if isinstance(value, dict):
        return _compact(value, name=None)
    if isinstance(value, list):
        return [_compact(v, name=None) if isinstance(v, dict) else v for v in value]
    return value


def _repeats(title: str, name: str | None) -> bool:
    """A title is redundant when it is the property name in other casing/spacing."""
    if name is None:
        return False
    return _WORD.sub("", title.lower()) == _WORD.sub("", name.lower())


def _restates_tool(title: str, tool: str) -> bool:
    plain = _WORD.sub("", title.lower())
    name = _WORD.sub("", tool.lower())
    return plain == name or plain in {name + s for s in ("arguments", "args", "input", "params")}


def schema_signature(schema: dict[str, Any]) -> str:
    """One line per argument, for agents: ``name*: type = default (constraints) — description``.

    ``*`` marks required arguments. Types are written the TypeScript way
    (``string[]``, ``"a"|"b"``, ``integer|null``, ``{x: number}``); every JSON
    Schema keyword that constrains a value is kept. Roughly a third of the
    tokens of the same schema as JSON.
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return "(no arguments)"
    required = set(schema.get("required") or ())
    return "; ".join(
        _argument(name, spec if isinstance(spec, dict) else {}, name in required)
        for name, spec in properties.items()
    )


_SHOWN_ELSEWHERE: Final = frozenset(
    {
        "type",
        "enum",
        "const",
        "items",
        "anyOf",
        "oneOf",
        "properties",
        "required",
        "default",
        "description",
        "$schema",
    }
)


def _argument(name: str, spec: dict[str, Any], required: bool) -> str:
    text = f"{name}{'*' if required else ''}: {_type(spec)}"
    if "default" in spec:
        text += f" = {_json(spec['default'])}"
    text += _extras(spec)
    description = spec.get("description")
    if isinstance(description, str) and not _restates(description, name):
        text += f" — {' '.join(description.split())}"
    return text


def _extras(spec: dict[str, Any]) -> str:
    """Every other keyword, verbatim: constraints, titles that add words, open/closed maps.

    ``additionalProperties: true`` is JSON Schema's default and says nothing.
    """
    extras = {
        k: v
        for k, v in spec.items()
        if k not in _SHOWN_ELSEWHERE and not (k == "additionalProperties" and v is True)
    }
    if not extras:
        return ""
    return " (" + ", ".join(f"{k} {_json(v)}" for k, v in extras.items()) + ")"


def _nested(spec: Any) -> str:
    """A schema inside a type (array items, a union member), with its own keywords."""
    if not isinstance(spec, dict):
        return "any"
    text = _type(spec) + _extras(spec)
    description = spec.get("description")
    if isinstance(description, str) and description.strip():
        text += f" — {' '.join(description.split())}"
    return text


def _type(spec: dict[str, Any]) -> str:
    if "enum" in spec and isinstance(spec["enum"], list):
        return _enum(spec["enum"])
    if "const" in spec:
        return _json(spec["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(spec.get(key), list):
            return "|".join(_nested(s) for s in spec[key])
    kind = spec.get("type", "any")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        items = spec.get("items")
        inner = _nested(items) if isinstance(items, dict) else "any"
        return f"({inner})[]" if "|" in inner or " " in inner else f"{inner}[]"
    if kind == "object" and isinstance(spec.get("properties"), dict):
        return "{" + schema_signature(spec) + "}"
    return str(kind)


# A string enum value written bare cannot be mistaken for anything else when it
# is a plain token that is not a JSON literal, a number or a type name.
_BARE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/\-]*")
_NOT_BARE: Final = frozenset(
    {"true", "false", "null", "string", "number", "integer", "boolean", "object", "array", "any"}
)


def _enum(values: list[Any]) -> str:
    """``"a"|"b"`` as ``a|b`` when every value is a plain string token (half the tokens).

    Long identifier enums (regions, item ids) are most of some schemas; the
    quotes around each value cost a token apiece and say nothing. Any value
    that is not a string, or could read as a literal or type, keeps JSON form.
    """
    if values and all(
        isinstance(v, str) and _BARE.fullmatch(v) and v.lower() not in _NOT_BARE for v in values
    ):
        return "|".join(values)
    return "|".join(_json(v) for v in values)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _restates(description: str, name: str) -> bool:
    """True for descriptions that add nothing to the name ("query: the query")."""
    words = set(_WORDS.findall(description.lower())) - _FILLER
    return words <= set(_WORDS.findall(name.lower().replace("_", " ")))


_WORDS = re.compile(r"[a-z0-9]+")
_FILLER: Final = frozenset({"the", "a", "an", "to", "of", "for", "this", "value"})
