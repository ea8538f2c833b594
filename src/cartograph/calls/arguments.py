"""Checking a `call` before any upstream I/O: meta-call repair, then schema validation.

Models often malform the *meta*-call (the arguments of our `call` tool): the
tool arguments arrive as a JSON string, wrapped twice, or the server and tool
are written as one ``server/tool`` string. When exactly one reading makes
sense we repair it and say so; otherwise we refuse with a corrective example.
The tool's own arguments are then validated against its input schema so a
bad call costs the upstream nothing (P-TOOL-1).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from cartograph import error_codes as codes
from cartograph.cards.model import ToolCard
from cartograph.errors import ArgumentError

if TYPE_CHECKING:
    import jsonschema

META_KEYS: Final = ("server", "tool", "arguments")
_SEPARATORS: Final = ("/", ".", ":")
MAX_SCHEMA_ERRORS: Final = 5

KnownTool = Callable[[str, str], bool]


@dataclass(frozen=True)
class MetaCall:
    """A well-formed meta-call plus the repairs that produced it (empty when none)."""

    server: str
    tool: str
    arguments: dict[str, Any]
    repairs: tuple[str, ...] = field(default=())


def corrective_example(server: str = "<server>", tool: str = "<tool>", example: Any = None) -> str:
    body = {"server": server, "tool": tool, "arguments": example if example is not None else {}}
    return json.dumps(body, ensure_ascii=False)


def repair_meta_call(raw: Mapping[str, Any] | None, known: KnownTool) -> MetaCall:
    """Return the meta-call ``raw`` means, repairing only unambiguous mistakes.

    Raises :class:`ArgumentError` (code ``bad_meta_call``) with a corrective
    example when the intent cannot be read with certainty.
    """
    repairs: list[str] = []
    body = dict(raw or {})
    body = _unwrap_whole_call(body, repairs)
    server, tool = _server_and_tool(body, known, repairs)
    arguments = _tool_arguments(body, repairs)
    return MetaCall(server=server, tool=tool, arguments=arguments, repairs=tuple(repairs))


def _refuse(reason: str, server: str = "<server>", tool: str = "<tool>") -> ArgumentError:
    example = corrective_example(server, tool)
    return ArgumentError(
        f"malformed call: {reason}. Pass exactly: {example}",
        code=codes.BAD_META_CALL,
        example=example,
    )


def _unwrap_whole_call(body: dict[str, Any], repairs: list[str]) -> dict[str, Any]:
    """``{"arguments": {"server": .., "tool": .., "arguments": ..}}`` → the inner call."""
    inner = body.get("arguments")
    if isinstance(inner, str):
        inner = _parse_json_object(inner)
    if (
        isinstance(inner, dict)
        and {"server", "tool"} <= inner.keys()
        and not ({"server", "tool"} & body.keys())
    ):
        repairs.append("the whole call was nested inside `arguments`; unwrapped it")
        return dict(inner)
    return body


def _server_and_tool(body: dict[str, Any], known: KnownTool, repairs: list[str]) -> tuple[str, str]:
    server, tool = body.get("server"), body.get("tool")
    if isinstance(server, str) and isinstance(tool, str) and server and tool:
        return server, tool
    combined = _combined_name(server, tool)
    if combined is None:
        raise _refuse("`server` and `tool` must both be non-empty strings")
    matches = {split for split in _splits(combined) if known(*split)}
    if len(matches) != 1:
        raise _refuse(f"cannot tell which server and tool {combined!r} names")
    (found,) = matches
    repairs.append(f"split {combined!r} into server {found[0]!r} and tool {found[1]!r}")
    return found


def _combined_name(server: Any, tool: Any) -> str | None:
    """The one string that holds ``server/tool`` when the other field is missing."""
    present = [v for v in (server, tool) if v not in (None, "")]
    if len(present) == 1 and isinstance(present[0], str):
        return present[0]
    return None


def _splits(combined: str) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for sep in _SEPARATORS:
        head, _, tail = combined.partition(sep)
        if head and tail:
            found.add((head, tail))
    return found


def _tool_arguments(body: dict[str, Any], repairs: list[str]) -> dict[str, Any]:
    extra = {k: v for k, v in body.items() if k not in META_KEYS}
    if "arguments" not in body or body["arguments"] is None:
        if extra:
            repairs.append(f"moved top-level keys {sorted(extra)} into `arguments`")
            return extra
        repairs.append("`arguments` was missing; used {}")
        return {}
    if extra:
        raise _refuse(f"unexpected top-level keys {sorted(extra)} beside `arguments`")
    arguments = body["arguments"]
    if isinstance(arguments, str):
        parsed = _parse_json_object(arguments)
        if parsed is None:
            raise _refuse("`arguments` is a string that is not a JSON object")
        repairs.append("`arguments` was a JSON string; parsed it")
        arguments = parsed
    if not isinstance(arguments, dict):
        raise _refuse(f"`arguments` must be an object, got {type(arguments).__name__}")
    if set(arguments) == {"arguments"} and isinstance(arguments["arguments"], dict):
        repairs.append("unwrapped nested `arguments.arguments`")
        arguments = arguments["arguments"]
    return dict(arguments)


def _parse_json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class SchemaValidator(Protocol):
    """A compiled JSON Schema validator (jsonschema's validators have this method)."""

    def iter_errors(self, instance: Any) -> Iterator[jsonschema.ValidationError]: ...


def compile_validator(schema: Mapping[str, Any]) -> SchemaValidator | None:
    """A jsonschema validator for ``schema``, built once per tool and reused per call.

    ``None`` when the schema cannot even be compiled; validation then defers to
    the upstream, as it does for schemas that only fail while validating.
    """
    # Imported at the first call, not with the server: ~0.1 s of CPU that no
    # `discover` needs, paid before a host's first answer otherwise.
    import jsonschema
    from jsonschema.exceptions import SchemaError as JsonSchemaError
    from jsonschema.validators import validator_for

    try:
        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        validator: SchemaValidator = cls(schema)
        return validator
    except (JsonSchemaError, RecursionError, TypeError):
        return None


class SchemaValidators:
    """Each tool's compiled schema validator, built on first use (one catalog holds one).

    An entry is reused while the card's tool entry is the same object; the
    pipeline verifies that entry intact just before asking, so its schema
    still holds the attested content. New cards: :meth:`clear`.
    """

    def __init__(self) -> None:
        self._compiled: dict[tuple[str, str, bool], tuple[ToolCard, SchemaValidator | None]] = {}

    def get(
        self, server: str, tool_card: ToolCard, *, upstream: bool = False
    ) -> SchemaValidator | None:
        """The served input schema's validator, or (``upstream``) a reshaped tool's upstream one."""
        key = (server, tool_card.name, upstream)
        cached = self._compiled.get(key)
        if cached is not None and cached[0] is tool_card:
            return cached[1]
        schema = tool_card.input_schema
        if upstream:
            schema = tool_card.transform.input_schema if tool_card.transform else {}
        validator = compile_validator(schema)
        self._compiled[key] = (tool_card, validator)
        return validator

    def clear(self) -> None:
        self._compiled.clear()


def validate_arguments(
    server: str,
    tool: str,
    schema: Mapping[str, Any],
    arguments: Mapping[str, Any],
    example: Any = None,
    *,
    validator: SchemaValidator | None = None,
) -> None:
    """Raise :class:`ArgumentError` (code ``bad_arguments``) showing the schema on mismatch.

    Pass ``validator`` (from :func:`compile_validator` on the same ``schema``)
    to skip compiling it again.
    """
    if validator is None:
        validator = compile_validator(schema)
        if validator is None:
            return
    from jsonschema.exceptions import SchemaError as JsonSchemaError  # loaded by compiling

    instance = arguments if isinstance(arguments, dict) else dict(arguments)
    try:
        errors = list(validator.iter_errors(instance))
    except (JsonSchemaError, RecursionError, TypeError):
        # A tool whose attested schema is not a valid JSON Schema: let the upstream judge.
        return
    if not errors:
        return
    errors.sort(key=lambda e: [str(p) for p in e.path])
    problems = [_describe(error) for error in errors[:MAX_SCHEMA_ERRORS]]
    schema_text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    message = (
        f"arguments for {server}/{tool} do not match its input schema: {'; '.join(problems)}. "
        f"Expected schema: {schema_text}"
    )
    if example is not None:
        message += f". Example call: {corrective_example(server, tool, example)}"
    raise ArgumentError(message, server=server, tool=tool, problems=problems, schema=dict(schema))


def _describe(error: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"at {where}: {error.message}"
