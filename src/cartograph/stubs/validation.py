"""The part of a tool schema that generated code embeds: validation keywords only.

Generated stubs carry each tool's input (and output) schema so the runtime can
validate arguments before anything is sent. A served schema also carries the
publisher's prose (``description``, ``title``, ``examples``, vendor ``x-*``
keys), which must never reach generated code (P-CARD-1: publisher text is a
hint for the operator, not something an agent reads). This module keeps only
keywords that affect validation, walking schema positions exactly, so a
*property* named ``description`` survives while the *keyword* does not.
"""

from __future__ import annotations

import json
from typing import Any, Final

# Keywords whose value is one subschema.
_ONE: Final = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
# Keywords whose value is a list of subschemas.
_MANY: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
# Keywords whose value maps names to subschemas.
_NAMED: Final = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)
# Keywords kept as plain data.
_DATA: Final = frozenset(
    {
        "$anchor",
        "$id",
        "$ref",
        "$schema",
        "const",
        "default",
        "dependentRequired",
        "enum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "format",
        "maxContains",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minContains",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "nullable",
        "pattern",
        "required",
        "type",
        "uniqueItems",
    }
)


def validation_schema(schema: object) -> object:
    """``schema`` with every non-validating keyword (publisher prose) removed."""
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if isinstance(value, list) and (key in _MANY or key == "items"):
            kept[key] = [validation_schema(v) for v in value]  # also draft-04 tuple `items`
        elif key in _ONE:
            kept[key] = validation_schema(value)
        elif key in _NAMED and isinstance(value, dict):
            kept[key] = {name: validation_schema(v) for name, v in value.items()}
        elif key == "dependencies" and isinstance(value, dict):
            kept[key] = {
                n: v if isinstance(v, list) else validation_schema(v) for n, v in value.items()
            }
        elif key in _DATA:
            kept[key] = value
    return kept


def schema_json(schema: object) -> str:
    """Canonical compact JSON for embedding: sorted keys, so regeneration is byte-identical."""
    return json.dumps(
        validation_schema(schema), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
