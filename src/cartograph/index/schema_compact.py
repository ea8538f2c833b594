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
