"""Each tool of a card as a Python function: its name, parameters and a one-line signature.

The generated stub modules (:mod:`cartograph.stubs.render`) and code mode's sandbox
(:mod:`cartograph.codemode`) name a tool's function and its keyword parameters the
same way, so a program written against one reads the same against the other. A
:class:`ToolShape` is that naming without the module around it: which Python name
carries which upstream argument key, which are required, and the signature as a
model reads it (nested objects shown as ``dict``: the sandbox defines no classes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cartograph.cards.model import Card, ToolCard
from cartograph.stubs.naming import Namespace, identifier
from cartograph.stubs.render import RESERVED, Param, _parameters, _return_type
from cartograph.stubs.typemap import PyType, TypeMapper, py_repr


@dataclass(frozen=True)
class ToolShape:
    """One tool as a function: ``params`` is None when it takes any keyword arguments."""

    tool: str
    function: str
    params: tuple[Param, ...] | None
    returns: str | None
    """The structured result's type when the output schema says more than ``Any``."""
    kwargs_type: str = "Any"

    def signature(self, prefix: str = "") -> str:
        """``prefix + function(a: int, *, b: str = "x") -> T`` on one line."""
        result = f" -> {self.returns}" if self.returns else ""
        return f"{prefix}{self.function}({', '.join(self._parameter_texts())}){result}"

    def _parameter_texts(self) -> list[str]:
        if self.params is None:
            return [f"**arguments: {self.kwargs_type}"]
        texts = [f"{p.name}: {p.type.expr}" for p in self.params if p.required]
        optional = [p for p in self.params if not p.required]
        if optional:
            texts.append("*")
        for p in optional:
            default = py_repr(p.default) if p.has_default else "None"
            texts.append(f"{p.name}: {p.type.expr} = {default}")
        return texts


def tool_shapes(card: Card, tools: Sequence[ToolCard] | None = None) -> dict[str, ToolShape]:
    """The shape of each tool (all of the card's by default), keyed by upstream tool name.

    Function names are claimed in tool-name order over the tools given, as the
    generated module claims them, so both spell a tool's function alike.
    """
    ordered = sorted(tools if tools is not None else card.body.tools, key=lambda t: t.name)
    names = Namespace(RESERVED)
    functions = {t.name: names.claim(identifier(t.name, prefix="tool")) for t in ordered}
    mapper = TypeMapper(names)
    shapes = {t.name: _shape(t, functions[t.name], mapper) for t in ordered}
    plain = _plain_dicts({td.name for td in mapper.typed_dicts})
    return {name: plain(shape) for name, shape in shapes.items()}


def _shape(tool: ToolCard, function: str, mapper: TypeMapper) -> ToolShape:
    mapper.set_root(tool.input_schema)
    params = _parameters(tool, mapper, function)
    returns = _return_type(tool, mapper, function)
    expr = returns.expr if returns is not None else None
    if isinstance(params, PyType):
        return ToolShape(tool.name, function, None, expr, params.expr)
    return ToolShape(tool.name, function, tuple(params), expr)


def _plain_dicts(classes: set[str]) -> _Plain:
    return _Plain(re.compile(r"\b(" + "|".join(map(re.escape, sorted(classes))) + r")\b"))


@dataclass(frozen=True)
class _Plain:
    """Rewrites generated ``TypedDict`` names in a shape's types to ``dict``."""

    names: re.Pattern[str]

    def __call__(self, shape: ToolShape) -> ToolShape:
        if self.names.pattern == r"\b()\b":
            return shape
        params = None
        if shape.params is not None:
            params = tuple(
                Param(p.name, p.key, self._type(p.type), p.required, p.default)
                if p.has_default
                else Param(p.name, p.key, self._type(p.type), p.required)
                for p in shape.params
            )
        returns = self.names.sub("dict", shape.returns) if shape.returns else None
        kwargs = self.names.sub("dict", shape.kwargs_type)
        return ToolShape(shape.tool, shape.function, params, returns, kwargs)

    def _type(self, value: PyType) -> PyType:
        members = tuple(dict.fromkeys(self.names.sub("dict", m) for m in value.members))
        return PyType(members, value.kinds, value.literals)
