"""Schema-derived pieces of a card: usage examples, argument summaries, safe prose.

A usage example is built from the input schema alone (defaults, enums,
formats, bounds) and kept only if ``jsonschema`` accepts it, so a card never
shows an agent a call that would be refused. The schema prose that a card
repeats (property descriptions and titles) is publisher text, so it goes
through the same sanitiser as tool descriptions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from cartograph.cards.generators.publisher import Topic, publisher_sentences
from cartograph.cards.generators.text import readable_words

MAX_DEPTH: Final = 6
PARAM_WORDS: Final = 16
SCHEMA_PROSE_WORDS: Final = 30
ENUM_LISTED: Final = 8
_FORMAT_SAMPLES: Final = {
    "uri": "https://example.com",
    "url": "https://example.com",
    "uri-reference": "https://example.com",
    "email": "user@example.com",
    "date": "2025-01-31",
    "date-time": "2025-01-31T12:00:00Z",
    "time": "12:00:00",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
}


def properties(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return {}
    return {str(k): dict(v) for k, v in props.items() if isinstance(v, Mapping)}


def required(schema: Mapping[str, Any]) -> list[str]:
    names = schema.get("required")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def example_for(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A valid arguments object for ``schema``; ``{}`` if none can be built."""
    for include_optional in (False, True):
        candidate = _object_sample(schema, schema, 0, include_optional)
        if isinstance(candidate, dict) and is_valid(candidate, schema):
            return candidate
    return {}


def is_valid(instance: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``instance`` validates. Internal helper for building examples only."""
    # Imported here: the index imports this package to read cards, and only
    # writing a card needs jsonschema (~0.2 s of `serve`'s and `discover`'s start).
    import jsonschema
    from jsonschema.exceptions import SchemaError as JsonSchemaError

    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
        return next(iter(validator.iter_errors(instance)), None) is None
    except (JsonSchemaError, jsonschema.exceptions.RefResolutionError, TypeError, ValueError):
        return False
    except RecursionError:
        return False


def _object_sample(
    schema: Mapping[str, Any], root: Mapping[str, Any], depth: int, optional: bool
) -> dict[str, Any]:
    sample: dict[str, Any] = {}
    needed = set(required(schema))
    for name, prop in properties(schema).items():
        if name in needed or (optional and "default" not in prop):
            sample[name] = _sample(prop, root, depth + 1, name)
    return sample


def _sample(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int, name: str) -> Any:
    schema = _resolve(schema, root)
    if depth > MAX_DEPTH:
        return None
    for key in ("const",):
        if key in schema:
            return schema[key]
    if "default" in schema:
        return schema["default"]
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and isinstance(options[0], Mapping):
            typed = [o for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
            return _sample(typed[0] if typed else options[0], root, depth, name)
    return _typed_sample(schema, root, depth, name)


def _typed_sample(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int, name: str) -> Any:
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "string":
        return _string_sample(schema, name)
    if kind in ("integer", "number"):
        return _number_sample(schema, kind)
    if kind == "boolean":
        return True
    if kind == "array":
        items = schema.get("items")
        count = max(1, int(schema.get("minItems", 1) or 1))
        item = _sample(items, root, depth + 1, name) if isinstance(items, Mapping) else "item"
        return [item] * min(count, 3)
    if kind == "object":
        return _object_sample(schema, root, depth, False)
    return None


def _string_sample(schema: Mapping[str, Any], name: str) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMAT_SAMPLES:
        return _FORMAT_SAMPLES[fmt]
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        sample = pattern_sample(pattern)
        if sample is not None:
            return sample
    text = " ".join(readable_words(name)) or "value"
    text = f"example {text}"
    min_len = schema.get("minLength")
    max_len = schema.get("maxLength")
    if isinstance(min_len, int) and len(text) < min_len:
        text = text + "x" * (min_len - len(text))
    if isinstance(max_len, int) and max_len >= 0:
        text = text[:max_len]
    return text


_CLASS_SAMPLES: Final = {"d": "1", "w": "a", "s": " ", "D": "a", "W": "-", "S": "a"}


def pattern_sample(pattern: str) -> str | None:
    """A shortest-ish string matching a *simple* regex (literals, classes, quantifiers).

    Groups and alternation are not attempted; ``None`` means "no sample".
    """
    out: list[str] = []
    i = 0
    body = pattern.removeprefix("^").removesuffix("$")
    while i < len(body):
        char = body[i]
        if char in "()|":
            return None
        if char == "\\" and i + 1 < len(body):
            piece, i = _CLASS_SAMPLES.get(body[i + 1], body[i + 1]), i + 2
        elif char == "[":
            end = body.find("]", i + 2)
            if end < 0:
                return None
            inner = body[i + 1 : end]
            piece = "x" if inner.startswith("^") else inner.lstrip("\\")[:1]
            i = end + 1
        elif char == ".":
            piece, i = "a", i + 1
        else:
            piece, i = char, i + 1
        count, i = _quantifier(body, i)
        out.append(piece * count)
    sample = "".join(out)
    try:
        return sample if re.search(pattern, sample) else None
    except re.error:
        return None


def _quantifier(body: str, i: int) -> tuple[int, int]:
    if i < len(body) and body[i] in "*?":
        return 0, i + 1
    if i < len(body) and body[i] == "+":
        return 1, i + 1
    match = re.match(r"\{(\d+)(,\d*)?\}", body[i:])
    if match:
        return int(match.group(1)), i + match.end()
    return 1, i


def _number_sample(schema: Mapping[str, Any], kind: str) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value: float = 1
    if isinstance(low, int | float) and not isinstance(low, bool):
        value = low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
    elif isinstance(high, int | float) and not isinstance(high, bool) and high < 1:
        value = high - 1 if "exclusiveMaximum" in schema and "maximum" not in schema else high
    return int(value) if kind == "integer" else value


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) a few hops."""
    for _ in range(8):
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            return schema
        schema = node
    return schema


def param_phrase(
    name: str, prop: Mapping[str, Any], is_required: bool, about: Topic | None = None
) -> str:
    """``min price (optional): lowest nightly price`` in plain words.

    Types and defaults stay in the schema (which ``discover`` shows): this
    text is ranked, and type words are the same noise for every tool. The
    hint is the publisher's first acceptable sentence about the parameter,
    whole, if it is short (:data:`PARAM_WORDS`); ``about`` is the topic it must
    stay on (the tool's and the parameter's names).
    """
    words = " ".join(readable_words(name)) or name
    facts = [] if is_required else ["optional"]
    enum = prop.get("enum")
    if isinstance(enum, list) and 0 < len(enum) <= ENUM_LISTED and all(_short(v) for v in enum):
        facts.append("one of " + ", ".join(str(v) for v in enum))
    kept = publisher_sentences(
        str(prop.get("description", "")),
        about,
        max_sentences=1,
        max_words=PARAM_WORDS,
        min_words=1,
    )
    hint = kept[0].rstrip(".") if kept else ""
    text = f"{words} ({'; '.join(facts)})" if facts else words
    return f"{text}: {hint}" if hint else text


def _short(value: Any) -> bool:
    """An enum value short enough to be a value, not a sentence smuggled into ranked text."""
    text = str(value)
    return len(text) <= 30 and len(text.split()) <= 2


def sanitise_schema(schema: Any, depth: int = 0) -> Any:
    """The schema with its prose (description, title) sanitised and ``$comment`` dropped.

    Prose is kept as whole acceptable sentences (see :mod:`.publisher`), without
    the topic check: it is shown to agents to fill arguments, not ranked.

    Validation keywords are untouched: what an agent may send is exactly what
    the upstream declared (and pinned by digest); only the words change.
    """
    if depth > 32:
        return schema
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "$comment":
                continue
            if key in ("description", "title") and isinstance(value, str):
                text = " ".join(
                    publisher_sentences(
                        value, None, max_sentences=2, max_words=SCHEMA_PROSE_WORDS, min_words=1
                    )
                )
                if text.endswith(".") and not value.rstrip().endswith("."):
                    text = text[:-1]  # a phrase stays a phrase ("City name")
                if text:
                    out[key] = text
                continue
            out[key] = sanitise_schema(value, depth + 1)
        return out
    if isinstance(schema, list):
        return [sanitise_schema(v, depth + 1) for v in schema]
    return schema
