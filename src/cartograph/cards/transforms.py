"""Reshaping a server's tools at bootstrap: the served definitions and their signed transforms.

The operator's :class:`~cartograph.config.transforms.ToolTransform` for a tool is
checked against the upstream's own definition and turned into two things:

- the tool *as served* (a :class:`~cartograph.catalog.model.ToolDef` under the
  served name, with the served input schema: renamed, re-described and narrowed
  arguments, hidden ones gone). The card generator describes this definition,
  so every text ranking reads, every example and the schema ``discover`` shows
  are the served shape;
- the :class:`~cartograph.cards.model.Transform` signed into the card, which the
  call pipeline's ``transform`` step uses to map a call back.

The drift pins are taken from the upstream's definition, never the served one
(``cards/attest.py``). Each problem is refused here, before any card is written,
with its own code (docs/cards.md, "Renamed and reshaped tools").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cartograph import error_codes as codes
from cartograph.cards.generators.schema import is_valid, properties, required, sanitise_schema
from cartograph.cards.model import CardBody, HiddenArgument, ToolCard, Transform
from cartograph.catalog.model import ServerDef, ToolDef
from cartograph.config.transforms import ArgumentTransform, ToolTransform
from cartograph.errors import GeneratorError
from cartograph.names import normalise_name


@dataclass(frozen=True)
class Reshaped:
    """One upstream tool as served: the definition the generator sees, and its transform."""

    served: ToolDef
    transform: Transform | None = None


def reshape_server(server: ServerDef, specs: Mapping[str, ToolTransform]) -> dict[str, Reshaped]:
    """Every tool of ``server`` as served (keyed by its upstream name), checked."""
    unknown = sorted(set(specs) - {t.name for t in server.tools})
    if unknown:
        raise GeneratorError(
            f"overrides for {server.name!r} name tools it does not serve: {unknown}",
            code=codes.OVERRIDE_UNKNOWN_TOOL,
        )
    out = {
        tool.name: _reshape_tool(server.name, tool, specs[tool.name])
        if tool.name in specs and specs[tool.name].reshapes
        else Reshaped(tool)
        for tool in server.tools
    }
    _check_distinct(server.name, [r.served.name for r in out.values()], "tool")
    return out


def served_server(server: ServerDef, reshaped: Mapping[str, Reshaped]) -> ServerDef:
    """``server`` with each tool replaced by its served definition (what generators describe)."""
    tools = tuple(reshaped[t.name].served for t in server.tools)
    return server if tools == server.tools else server.model_copy(update={"tools": tools})


def _reshape_tool(server: str, tool: ToolDef, spec: ToolTransform) -> Reshaped:
    where = f"{server}/{tool.name}"
    props = properties(tool.input_schema)
    unknown = sorted(set(spec.args) - set(props))
    if unknown:
        raise GeneratorError(
            f"the transform of {where} names arguments it does not take: {unknown}; "
            f"its arguments are {sorted(props)}",
            code=codes.TRANSFORM_UNKNOWN_ARGUMENT,
        )
    shape = _Arguments.of(where, tool.input_schema, spec)
    served = tool.model_copy(
        update={
            "name": spec.name or tool.name,
            "title": spec.title if spec.title is not None else tool.title,
            "input_schema": shape.served_schema(tool.input_schema),
        }
    )
    transform = Transform(
        upstream=tool.name,
        title=spec.title,
        input_schema=sanitise_schema(tool.input_schema),
        renamed=shape.renamed,
        hidden=shape.hidden,
    )
    return Reshaped(served, transform)


@dataclass
class _Arguments:
    """One tool's arguments as served: their schemas, the renames, the hidden ones."""

    served: dict[str, Any]
    renamed: dict[str, str]
    hidden: dict[str, HiddenArgument]

    @classmethod
    def of(cls, where: str, schema: Mapping[str, Any], spec: ToolTransform) -> _Arguments:
        needed = set(required(schema))
        out = cls({}, {}, {})
        props = properties(schema)
        for name, prop in props.items():
            arg = spec.args.get(name, ArgumentTransform())
            if arg.hidden:
                out.hidden[name] = _hidden(where, name, prop, arg, name in needed)
                continue
            served_name = arg.name or name
            if served_name != name:
                if served_name in props or served_name in out.renamed:
                    raise _collision(
                        where,
                        f"argument {name!r} is served as {served_name!r}, another argument's name",
                    )
                out.renamed[served_name] = name
            out.served[served_name] = _served_property(where, name, prop, arg)
        return out

    def served_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """The upstream's input schema with these arguments in place of its own."""
        back = {upstream: served for served, upstream in self.renamed.items()}
        out = {**schema, "properties": self.served}
        if "required" in schema:
            out["required"] = [back.get(n, n) for n in required(schema) if n not in self.hidden]
        return out


def _hidden(
    where: str, name: str, prop: Mapping[str, Any], arg: ArgumentTransform, needed: bool
) -> HiddenArgument:
    if arg.value is not None:
        if not is_valid(arg.value, prop):
            raise GeneratorError(
                f"the fixed value of {where} argument {name!r} does not match the upstream's "
                "schema for it; give a value it accepts",
                code=codes.TRANSFORM_BAD_NARROWING,
            )
        return HiddenArgument(source="fixed", value=arg.value)
    if arg.env is not None:
        return HiddenArgument(source="env", env=arg.env)
    if needed:
        raise GeneratorError(
            f"{where} requires argument {name!r}, which the transform hides without a value; "
            'give it `value = ...` (fixed) or `env = "VARIABLE"` (read by the proxy)',
            code=codes.TRANSFORM_NEEDS_VALUE,
        )
    return HiddenArgument(source="omitted")


def _served_property(
    where: str, name: str, prop: Mapping[str, Any], arg: ArgumentTransform
) -> dict[str, Any]:
    """The argument's schema as served: narrowed only to values the upstream's also accepts."""
    out = dict(prop)
    if arg.description is not None:
        out["description"] = arg.description
    if arg.enum is not None:
        refused = [v for v in arg.enum if not is_valid(v, prop)]
        if refused:
            raise _narrowing(where, name, f"enum values {refused!r} are not allowed upstream")
        out["enum"] = list(arg.enum)
    for bound in ("minimum", "maximum"):
        value = getattr(arg, bound)
        if value is None:
            continue
        if not _numeric(prop) or not is_valid(value, prop):
            raise _narrowing(where, name, f"{bound} {value!r} is not a value the upstream allows")
        out[bound] = value
    return out


def _numeric(prop: Mapping[str, Any]) -> bool:
    kinds = prop.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return bool({"number", "integer"} & set(kinds))


def _narrowing(where: str, name: str, why: str) -> GeneratorError:
    return GeneratorError(
        f"the transform of {where} argument {name!r} is not narrower than the upstream's "
        f"schema: {why}",
        code=codes.TRANSFORM_BAD_NARROWING,
    )


def _collision(where: str, why: str) -> GeneratorError:
    return GeneratorError(
        f"{where}: {why}; choose another served name",
        code=codes.TRANSFORM_NAME_COLLISION,
    )


def _check_distinct(where: str, names: list[str], what: str) -> None:
    """Two served names that read as one (P-NAME-1) would address two things by one name."""
    seen: dict[str, str] = {}
    for name in names:
        key = normalise_name(name)
        if key in seen:
            raise _collision(where, f"{what}s {seen[key]!r} and {name!r} are served as one name")
        seen[key] = name


def reshaped_from_card(body: CardBody) -> dict[str, Reshaped]:
    """The served shapes a signed card already holds, for re-signing it with new text."""
    return {
        tool.upstream_name: Reshaped(
            ToolDef(name=tool.name, inputSchema=tool.input_schema), tool.transform
        )
        for tool in body.tools
        if tool.transform is not None
    }


_NARROWING_KEYS = ("enum", "minimum", "maximum")


def describe_transform(tool: ToolCard) -> dict[str, Any] | None:
    """A reshaped tool's transform as ``cards show`` and ``tools`` print it; None: not reshaped.

    Hidden values are shown as their source: a fixed value (the operator wrote it
    and signed it), the environment variable's *name*, never its value.
    """
    shape = tool.transform
    if shape is None:
        return None
    upstream_props = properties(shape.input_schema)
    narrowed = {}
    for name, prop in properties(tool.input_schema).items():
        was = upstream_props.get(shape.renamed.get(name, name), {})
        changed = {k: prop[k] for k in _NARROWING_KEYS if k in prop and prop[k] != was.get(k)}
        if changed:
            narrowed[name] = changed
    return {
        "served": tool.name,
        "upstream": shape.upstream,
        "title": shape.title,
        "renamed": dict(sorted(shape.renamed.items())),
        "hidden": {name: _source(h) for name, h in sorted(shape.hidden.items())},
        "narrowed": narrowed,
    }


def _source(hidden: HiddenArgument) -> str:
    if hidden.source == "fixed":
        return "fixed " + json.dumps(hidden.value, ensure_ascii=False, separators=(",", ":"))
    if hidden.source == "env":
        return f"${hidden.env}"
    return "never sent"


def transform_line(tool: ToolCard) -> str:
    """One line for a table: ``invoice <- create_invoice; amount <- amount_cents; ...``."""
    found = describe_transform(tool)
    if found is None:
        return ""
    parts = [f"{found['served']} <- {found['upstream']}"] if tool.name != found["upstream"] else []
    parts += [f"{s} <- {u}" for s, u in found["renamed"].items()]
    parts += [f"{name}: hidden, {how}" for name, how in found["hidden"].items()]
    parts += [
        f"{name}: " + ", ".join(f"{k} {json.dumps(v)}" for k, v in spec.items())
        for name, spec in found["narrowed"].items()
    ]
    if found["title"] is not None:
        parts.append(f"title {found['title']!r}")
    return "; ".join(parts)
