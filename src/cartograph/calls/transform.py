"""The ``transform`` step: a call to a reshaped tool, mapped back to the upstream's own shape.

An operator can serve a tool under another name, with renamed, narrowed and
hidden arguments (``config/transforms.py``); the card signs that served shape
and a :class:`~cartograph.cards.model.Transform` saying how it maps back. The
agent only ever sees and sends the served shape. This step, after ``drift``
and before ``validate``, turns the served call into the upstream's:

- an argument the operator hides may not be set (``argument_hidden``), and the
  upstream's name of a renamed argument is not one the agent may use;
- served argument names become the upstream's; hidden ones are filled in (a
  fixed value, or the proxy's environment variable, read now:
  ``config_env_var`` when it is not set);
- the tool name becomes the upstream's.

``validate`` then checks the served arguments against the served (narrowed)
schema and the mapped ones against the upstream's (``transform_mismatch``:
the operator's transform, not the agent, is wrong), all before any upstream
I/O; ``forward`` sends the mapped call. A tool without a transform is left
exactly as it was.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from typing import Any

from cartograph import error_codes as codes
from cartograph.calls.arguments import MetaCall, SchemaValidator, compile_validator
from cartograph.calls.request import Call
from cartograph.cards.generators.schema import properties
from cartograph.cards.model import HiddenArgument, ToolCard, Transform
from cartograph.errors import ArgumentError, CallError, ConfigError


async def transform(site: object, call: Call) -> None:
    """Map a reshaped tool's call to the upstream's name and arguments (``call.upstream``)."""
    tool_card = call.tool_card
    assert tool_card is not None  # drift refuses a tool the card does not have
    if tool_card.transform is None:
        return
    target = call.resolved
    arguments = to_upstream(target.server, tool_card, target.arguments, os.environ)
    call.upstream = MetaCall(target.server, tool_card.transform.upstream, arguments, target.repairs)


def to_upstream(
    server: str, tool_card: ToolCard, arguments: Mapping[str, Any], environ: Mapping[str, str]
) -> dict[str, Any]:
    """``arguments`` (served names) as the upstream takes them, hidden ones filled in."""
    shape = tool_card.transform
    if shape is None:
        return dict(arguments)
    where = f"{server}/{tool_card.name}"
    served_as = {upstream: served for served, upstream in shape.renamed.items()}
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        if key in shape.renamed:
            out[shape.renamed[key]] = value
        elif key in shape.hidden:
            raise ArgumentError(
                f"argument {key!r} of {where} is set by the operator, not by the caller; "
                "leave it out",
                code=codes.ARGUMENT_HIDDEN,
                server=server,
                tool=tool_card.name,
            )
        elif key in served_as:
            raise ArgumentError(
                f"{where} has no argument {key!r}; it is called {served_as[key]!r} here",
                server=server,
                tool=tool_card.name,
            )
        else:
            out[key] = value
    for name, hidden in shape.hidden.items():
        if hidden.source != "omitted":
            out[name] = _hidden_value(where, name, hidden, shape, environ)
    return out


def _hidden_value(
    where: str, name: str, hidden: HiddenArgument, shape: Transform, environ: Mapping[str, str]
) -> Any:
    if hidden.source == "fixed":
        return copy.deepcopy(hidden.value)
    text = environ.get(hidden.env)
    if text is None:
        raise ConfigError(
            f"{where} takes argument {name!r} from the proxy's environment variable "
            f"{hidden.env}, which is not set; set it where `cartograph serve` runs",
            code=codes.CONFIG_ENV_VAR,
            key=hidden.env,
        )
    return _typed(text, properties(shape.input_schema).get(name, {}))


def _typed(text: str, prop: Mapping[str, Any]) -> Any:
    """An environment value as the argument's type: a string, or JSON for a non-string one."""
    kinds = prop.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if kinds == [None] or "string" in kinds:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # validate refuses it with transform_mismatch


def upstream_validator(tool_card: ToolCard) -> SchemaValidator | None:
    """The compiled validator of a reshaped tool's upstream input schema."""
    shape = tool_card.transform
    return compile_validator(shape.input_schema) if shape is not None else None


def check_upstream(
    server: str,
    tool_card: ToolCard,
    arguments: Mapping[str, Any],
    validator: SchemaValidator | None,
) -> None:
    """Raise ``transform_mismatch`` when the mapped call does not match the upstream's schema.

    The served schema is narrower, so this only fails when the operator's
    transform or hidden value is wrong. The message names the argument paths,
    never a value or the upstream's schema (a hidden value may be a secret).
    """
    if validator is None:
        return
    try:
        errors = list(validator.iter_errors(dict(arguments)))
    except (RecursionError, TypeError):
        return
    if not errors:
        return
    paths = sorted({"/".join(str(p) for p in e.absolute_path) or "(root)" for e in errors})
    raise CallError(
        f"the call to {server}/{tool_card.name}, mapped to the upstream's shape, does not "
        f"match its schema at {', '.join(paths)}: the operator's transform or hidden value "
        "does not fit the upstream; the operator fixes it and runs `cartograph bootstrap`",
        code=codes.TRANSFORM_MISMATCH,
        server=server,
        tool=tool_card.name,
    )
