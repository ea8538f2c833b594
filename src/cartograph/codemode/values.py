"""Values across the sandbox's edge: a tool's result in, the program's value out as JSON.

In: a tool's structured content when it has one, else its text (the text blocks
joined), else its content blocks as plain JSON objects. Out: the program's last
expression's value as JSON, with what JSON lacks made explicit (tuples and sets
become arrays, bytes a ``{"bytes_base64": …}`` object, a non-finite float its
name, anything else its ``repr``); the encoded value must fit the run's byte
budget, or the run is ``code_output_too_large`` (a value cut short is not JSON).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any, Final

from mcp.types import CallToolResult, TextContent

from cartograph import error_codes as codes
from cartograph.errors import CodeError

MAX_DEPTH: Final = 64


def value_of_result(result: CallToolResult) -> Any:
    """What an inner call returns to the program (see the module docstring)."""
    if result.structured_content is not None:
        return result.structured_content
    texts = [b.text for b in result.content if isinstance(b, TextContent)]
    if len(texts) == len(result.content):
        return "\n".join(texts)
    return [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]


def to_json(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data (see the module docstring)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth >= MAX_DEPTH:
        return repr(value)
    if isinstance(value, Mapping):
        return {_key(k): to_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        items = [to_json(v, depth + 1) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, bytes | bytearray):
        return {"bytes_base64": base64.b64encode(bytes(value)).decode("ascii")}
    return repr(value)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else json.dumps(to_json(key))


def encoded_value(value: Any, budget: int) -> tuple[Any, int]:
    """``value`` as JSON data and its encoded size; raises when it is over ``budget`` bytes."""
    data = to_json(value)
    size = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > budget:
        raise CodeError(
            f"the program's value is {size} bytes as JSON, over [code_mode] max_output_bytes "
            f"({budget}); return less (a summary, the first items, a count)",
            code=codes.CODE_OUTPUT_TOO_LARGE,
            size=size,
            limit=budget,
        )
    return data, size
