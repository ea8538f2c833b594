"""JSON Schema → Python type expressions and ``TypedDict`` definitions.

One :class:`TypeMapper` serves one generated module: it hands out class names
from the module's :class:`~cartograph.stubs.naming.Namespace` and collects the
``TypedDict`` definitions in an order where a class is defined after the
classes its fields name (recursive ``$ref`` cycles are fine: the generated
module uses postponed annotations and string forms).

What maps: ``type`` (single or list), ``enum``/``const`` as ``Literal``,
``anyOf``/``oneOf`` as unions, ``allOf`` of objects merged, objects with
``properties`` as ``TypedDict`` (``required`` vs ``NotRequired``), maps
(``additionalProperties`` schema) as ``dict[str, T]``, arrays as ``list[T]``,
``nullable``, ``not: {}`` (matches nothing) dropped from unions, and local
``$ref`` JSON pointers (including ``$defs``). Everything else (``format``,
``pattern``, bounds, remote refs, ``if``/``then``, extra keys beside
``properties``) is not expressible in Python's static types and is left to the
runtime's jsonschema validation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote

from cartograph.stubs.naming import Namespace, class_name

_SCALARS: Final = {
    "string": ("str", "str"),
    "integer": ("int", "int"),
    "number": ("float", "float"),
    "boolean": ("bool", "bool"),
    "null": ("None", "none"),
}
_OBJECT_HINTS: Final = ("properties", "additionalProperties", "required", "patternProperties")
_BRANCH_KEYS: Final = ("anyOf", "oneOf")


def py_repr(value: object) -> str:
    """A Python literal for a JSON scalar; strings in double quotes where that is safe."""
    if isinstance(value, str) and value.isprintable() and not ('"' in value and "'" not in value):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _kind(value: object) -> str | None:
    """The scalar kind of a JSON value, or None for arrays/objects."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return None


@dataclass(frozen=True)
class PyType:
    """A type as the members of a union, plus what scalar defaults it accepts."""

    members: tuple[str, ...]
    kinds: frozenset[str] = frozenset()
    literals: frozenset[tuple[str, object]] = frozenset()

    @property
    def expr(self) -> str:
        return " | ".join(self.members) if self.members else "Never"

    @property
    def is_any(self) -> bool:
        return "any" in self.kinds

    @property
    def is_never(self) -> bool:
        return not self.members

    @property
    def nullable(self) -> bool:
        return "None" in self.members or self.is_any

    def accepts(self, value: object) -> bool:
        """Whether ``value`` can be written as this type's default and type-check."""
        kind = _kind(value)
        if kind is None:
            return False
        if self.is_any or kind in self.kinds or (kind, value) in self.literals:
            return True
        return kind == "int" and "float" in self.kinds


def single(expr: str, *kinds: str) -> PyType:
    return PyType((expr,), frozenset(kinds))


ANY: Final = single("Any", "any")
NEVER: Final = PyType(())
NONE: Final = single("None", "none")


def union(members: Sequence[PyType]) -> PyType:
    """``A | B`` with duplicates and never-types dropped, ``None`` last."""
    live = [m for m in members if not m.is_never]
    if any(m.is_any for m in live):
        return ANY
    exprs: list[str] = []
    for member in live:
        exprs += [e for e in member.members if e not in exprs]
    if "None" in exprs:
        exprs = [e for e in exprs if e != "None"] + ["None"]
    return PyType(
        tuple(exprs),
        frozenset().union(*(m.kinds for m in live)),
        frozenset().union(*(m.literals for m in live)),
    )


@dataclass(frozen=True)
class FieldDef:
    key: str
    type: PyType
    required: bool


@dataclass(frozen=True)
class TypedDictDef:
    name: str
    fields: tuple[FieldDef, ...]
    origin: str


def ordered_keys(properties: Mapping[str, Any], required: Sequence[str]) -> list[str]:
    """Required keys in ``required`` order, then optional keys sorted.

    Canonical JSON sorts object keys, so a card read back from disk may list
    ``properties`` in another order than the live schema; this order is the
    same either way, which keeps regeneration byte-identical.
    """
    first = [k for k in dict.fromkeys(required) if k in properties]
    rest = sorted(k for k in properties if k not in first)
    return first + rest


def required_of(schema: Mapping[str, Any]) -> list[str]:
    raw = schema.get("required")
    if not isinstance(raw, list):
        return []
    return [r for r in dict.fromkeys(raw) if isinstance(r, str)]


def resolve_pointer(root: object, ref: str) -> object | None:
    """The node a local ``#/...`` reference names, or None when it does not resolve."""
    if not ref.startswith("#"):
        return None
    node = root
    for raw in unquote(ref[1:]).split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


@dataclass
class TypeMapper:
    """Maps the schemas of one generated module to type expressions."""

    classes: Namespace
    typed_dicts: list[TypedDictDef] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    _root: object = None
    _pointer_classes: dict[str, str] = field(default_factory=dict)
    _ref_stack: set[str] = field(default_factory=set)

    def set_root(self, schema: object) -> None:
        """Start a new tool schema: ``$ref`` pointers resolve against it from now on."""
        self._root = schema
        self._pointer_classes = {}
        self._ref_stack = set()

    def map_root(self, schema: object, parts: tuple[str, ...]) -> PyType:
        """Map a whole tool schema (e.g. an output schema) as one type."""
        self.set_root(schema)
        return self.map(schema, parts, "#")

    def map_fields(
        self, schema: Mapping[str, Any], parts: tuple[str, ...], pointer: str | None
    ) -> tuple[FieldDef, ...]:
        """The fields of an object schema, in canonical order."""
        props = schema.get("properties")
        properties: Mapping[str, Any] = props if isinstance(props, dict) else {}
        required = required_of(schema)
        fields: list[FieldDef] = []
        for key in ordered_keys(properties, required):
            child = _child(pointer, "properties", key)
            mapped = self.map(properties[key], (*parts, key), child)
            if not mapped.is_never:  # a `false` property can never be sent
                fields.append(FieldDef(key, mapped, key in required))
        fields += [FieldDef(k, self._use(ANY), True) for k in required if k not in properties]
        return tuple(fields)

    def map(self, schema: object, parts: tuple[str, ...], pointer: str | None) -> PyType:
        if schema is True or schema == {}:
            return self._use(ANY)
        if schema is False:
            return NEVER
        if not isinstance(schema, dict):
            return self._use(ANY)
        if isinstance(schema.get("$ref"), str):
            return self._map_ref(schema["$ref"], parts)
        if "const" in schema:
            return self._literal([schema["const"]], schema, parts, pointer)
        if isinstance(schema.get("enum"), list):
            return self._literal(schema["enum"], schema, parts, pointer)
        for key in _BRANCH_KEYS:
            if isinstance(schema.get(key), list) and schema[key]:
                return self._map_branches(schema, key, parts)
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            return self.map(_merge_all_of(schema), parts, None)
        if schema.get("not") in ({}, True):
            return NEVER
        mapped = self._map_type(schema, parts, pointer)
        return union([mapped, NONE]) if schema.get("nullable") is True else mapped

    def _use(self, pytype: PyType, *names: str) -> PyType:
        if pytype.is_any:
            self.used.add("Any")
        self.used.update(names)
        return pytype

    def _map_ref(self, ref: str, parts: tuple[str, ...]) -> PyType:
        if ref in self._pointer_classes:
            return single(self._pointer_classes[ref], "object")
        target = resolve_pointer(self._root, ref)
        if target is None or ref in self._ref_stack:
            return self._use(ANY)
        segments = ref.split("/")
        if len(segments) >= 2 and segments[-2] in ("$defs", "definitions"):
            parts = (segments[-1],)
        self._ref_stack.add(ref)
        try:
            return self.map(target, parts, ref)
        finally:
            self._ref_stack.discard(ref)

    def _literal(
        self, values: list[Any], schema: dict[str, Any], parts: tuple[str, ...], pointer: str | None
    ) -> PyType:
        kinds = [_kind(v) for v in values]
        if not values or any(k in (None, "float") for k in kinds):
            base = {k: v for k, v in schema.items() if k not in ("enum", "const")}
            if "type" not in base and values:  # Literal cannot hold floats or containers
                base["type"] = sorted({_json_type(v) for v in values})
            return self.map(base or True, parts, pointer)
        seen: list[tuple[str, object]] = []
        for value, kind in zip(values, kinds, strict=True):
            if kind is not None and (kind, value) not in seen:
                seen.append((kind, value))
        shown = [py_repr(v) for k, v in seen if k != "none"]
        members = (
            [PyType((f"Literal[{', '.join(shown)}]",), literals=frozenset(seen))] if shown else []
        )
        if any(k == "none" for k, _ in seen):
            members.append(NONE)
        if shown:
            self.used.add("Literal")
        return union(members)

    def _map_branches(self, schema: dict[str, Any], key: str, parts: tuple[str, ...]) -> PyType:
        base = {k: v for k, v in schema.items() if k not in _BRANCH_KEYS}
        members = []
        for branch in schema[key]:
            merged = {**base, **branch} if isinstance(branch, dict) else branch
            members.append(self.map(merged, parts, None))
        return union(members)

    def _map_type(
        self, schema: dict[str, Any], parts: tuple[str, ...], pointer: str | None
    ) -> PyType:
        declared = schema.get("type")
        if isinstance(declared, list):
            names = [t for t in declared if isinstance(t, str)]
            return (
                union([self._map_named(t, schema, parts, pointer) for t in names])
                if names
                else self._use(ANY)
            )
        if isinstance(declared, str):
            return self._map_named(declared, schema, parts, pointer)
        if any(k in schema for k in _OBJECT_HINTS):
            return self._map_named("object", schema, parts, pointer)
        if "items" in schema or "prefixItems" in schema:
            return self._map_named("array", schema, parts, pointer)
        return self._use(ANY)

    def _map_named(
        self, name: str, schema: dict[str, Any], parts: tuple[str, ...], pointer: str | None
    ) -> PyType:
        if name in _SCALARS:
            expr, kind = _SCALARS[name]
            return single(expr, kind)
        if name == "array":
            return single(f"list[{self._items(schema, parts, pointer).expr}]", "array")
        if name == "object":
            return self._object(schema, parts, pointer)
        return self._use(ANY)

    def _items(self, schema: dict[str, Any], parts: tuple[str, ...], pointer: str | None) -> PyType:
        items = schema.get("items", True)
        if isinstance(items, list):  # draft-04..2019 tuple form
            return (
                union([self.map(s, (*parts, "item"), None) for s in items])
                if items
                else self._use(ANY)
            )
        if isinstance(schema.get("prefixItems"), list):
            tuple_items = [self.map(s, (*parts, "item"), None) for s in schema["prefixItems"]]
            return union([*tuple_items, self.map(items, (*parts, "item"), None)])
        item = self.map(items, (*parts, "item"), _child(pointer, "items"))
        return self._use(ANY) if item.is_never else item

    def _object(
        self, schema: dict[str, Any], parts: tuple[str, ...], pointer: str | None
    ) -> PyType:
        props = schema.get("properties")
        if not (isinstance(props, dict) and props) and not required_of(schema):
            extra = schema.get("additionalProperties")
            value = (
                self.map(extra, (*parts, "value"), None)
                if isinstance(extra, dict) and extra
                else ANY
            )
            return single(f"dict[str, {self._use(value).expr}]", "object")
        if pointer is not None and pointer in self._pointer_classes:
            return single(self._pointer_classes[pointer], "object")
        name = self.classes.claim(class_name(*parts))
        if pointer is not None:
            self._pointer_classes[pointer] = name
        fields = self.map_fields(schema, parts, pointer)
        if any(not f.required for f in fields):
            self.used.add("NotRequired")
        self.used.add("TypedDict")
        self.typed_dicts.append(TypedDictDef(name, fields, ".".join(parts)))
        return single(name, "object")


def _json_type(value: object) -> str:
    """The JSON Schema type name of a value (numbers widen to ``number``)."""
    kind = _kind(value)
    if kind in ("int", "float"):
        return "number"
    names = {"str": "string", "bool": "boolean", "none": "null"}
    if kind is not None:
        return names[kind]
    return "array" if isinstance(value, list) else "object"


def _child(pointer: str | None, *tokens: str) -> str | None:
    if pointer is None:
        return None
    escaped = (t.replace("~", "~0").replace("/", "~1") for t in tokens)
    return "/".join((pointer, *escaped))


def _merge_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """``allOf`` of object schemas as one object: properties and required unioned."""
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    properties: dict[str, Any] = dict(merged.get("properties") or {})
    required = required_of(merged)
    for part in schema["allOf"]:
        if not isinstance(part, dict):
            continue
        properties.update(part.get("properties") or {})
        required += [r for r in required_of(part) if r not in required]
        merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
    if properties:
        merged["properties"] = properties
    if required:
        merged["required"] = required
    return merged
