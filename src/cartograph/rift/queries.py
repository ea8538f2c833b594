"""Layer 2's probes: a synthetic task query per tool, built from its arguments.

The paper generates q_t from args(t), *not* from the card summary, so the
probe is not the text it is compared with (which would make every margin
look healthy). The arguments are what a task actually supplies: their names,
descriptions, types and allowed values. A tool without arguments falls back
to its own name split into words — still not card text.

Arguments alone cannot identify a tool whose arguments another tool shares
(``get_story(id)`` / ``get_story_with_comments(id)``): both get the same probe,
so eq. 11 forces one of the two margins to be ≤ 0 whatever their cards say.
:func:`probe_ladder` therefore returns the probes to try in order; Layer 2
compares a pair with the first rung on which the two tools' probes differ —
arguments, then the tool's name in words, then the server's — so the probe
only ever gains the least identifying fact that separates the pair.

Argument descriptions come from the served schema, i.e. from the publisher.
They are only embedded as a transient probe, but they are sanitised anyway
(control and zero-width characters, URLs and markup dropped, lengths capped)
so a hostile schema cannot smuggle a long payload into reports.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from cartograph.names import split_identifier
from cartograph.rift.model import ProbeMode
from cartograph.rift.tokens import token_key, words

MAX_ARGUMENTS: Final = 6
MAX_DESCRIPTION_WORDS: Final = 14
MAX_ENUM_VALUES: Final = 5
MAX_QUERY_CHARS: Final = 400

_URL: Final = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)
_MARKUP: Final = re.compile(r"<[^>]{0,200}>|[`*#\[\]{}|\\]")
_SPACE: Final = re.compile(r"\s+")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?。])\s")


@dataclass(frozen=True)
class Probe:
    text: str
    source: Literal["arguments", "name", "name+arguments", "server+name+arguments"]


def clean(text: str) -> str:
    """Printable, single-spaced text with URLs and markup removed."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C" or ch in " \t\n")
    text = _MARKUP.sub(" ", _URL.sub(" ", text))
    return _SPACE.sub(" ", text).strip()


def name_words(identifier: str) -> str:
    """``get_xrefsTo`` → ``get xrefs To``."""
    return _SPACE.sub(" ", split_identifier(identifier)).strip()


def probe_for(tool_name: str, input_schema: Mapping[str, Any], *, with_name: bool = False) -> Probe:
    """q_t for one tool: its arguments as a task would mention them.

    ``with_name`` prefixes the tool's name in words: a task states what it
    wants done, and two tools that take the same arguments otherwise get the
    same probe, so one of their margins is ≤ 0 whatever their cards say.
    """
    text = _arguments_text(input_schema)
    if not text:
        return Probe(text=name_words(tool_name), source="name")
    if with_name:
        return Probe(text=_cap(f"{name_words(tool_name)}: {text}"), source="name+arguments")
    return Probe(text=_cap(text), source="arguments")


def probe_ladder(
    server: str, tool_name: str, input_schema: Mapping[str, Any], mode: ProbeMode
) -> tuple[Probe, ...]:
    """The probes Layer 2 may use for one tool, least identifying first.

    ``arguments`` and ``name+arguments`` are single fixed probes (the paper's
    configuration and its named variant); ``distinguishing`` is the paper's
    argument probe followed by the fallbacks used only for rivals it ties with.
    """
    if mode == "arguments":
        return (probe_for(tool_name, input_schema),)
    named = probe_for(tool_name, input_schema, with_name=True)
    if mode == "name+arguments":
        return (named,)
    served = Probe(
        text=_cap(f"{name_words(clean(server))} {named.text}"), source="server+name+arguments"
    )
    return (probe_for(tool_name, input_schema), named, served)


def probe_key(text: str) -> tuple[str, ...]:
    """What makes two probes the same task: their content words, case and plurals folded."""
    return tuple(token_key(w) for w in words(text))


def _arguments_text(input_schema: Mapping[str, Any]) -> str:
    phrases = [_argument_phrase(name, spec) for name, spec in _ordered_arguments(input_schema)]
    return "; ".join(p for p in phrases if p)


def _cap(text: str) -> str:
    return text[:MAX_QUERY_CHARS]


def _ordered_arguments(schema: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Required arguments first (they define the task), then the rest, capped."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = schema.get("required")
    needed = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    items = [(str(k), v if isinstance(v, Mapping) else {}) for k, v in properties.items()]
    items.sort(key=lambda kv: kv[0] not in needed)  # stable: keeps schema order otherwise
    return items[:MAX_ARGUMENTS]


def _argument_phrase(name: str, spec: Mapping[str, Any]) -> str:
    parts = [name_words(clean(name))]
    kind = _type_word(spec)
    if kind:
        parts.append(f"({kind})")
    description = _short(spec.get("description"))
    if description:
        parts.append(description)
    values = _enum_values(spec)
    if values:
        parts.append("one of " + ", ".join(values))
    return " ".join(p for p in parts if p).strip()


def _type_word(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "array":
        items = spec.get("items")
        inner = items.get("type") if isinstance(items, Mapping) else None
        return f"list of {inner}" if isinstance(inner, str) else "list"
    return kind if isinstance(kind, str) else ""


def _short(value: object) -> str:
    if not isinstance(value, str):
        return ""
    text = clean(value)
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    return " ".join(first.split()[:MAX_DESCRIPTION_WORDS])


def _enum_values(spec: Mapping[str, Any]) -> list[str]:
    values = spec.get("enum")
    if not isinstance(values, list):
        items = spec.get("items")
        values = items.get("enum") if isinstance(items, Mapping) else None
    if not isinstance(values, list):
        return []
    shown = [clean(str(v))[:40] for v in values[:MAX_ENUM_VALUES] if v is not None]
    return [v for v in shown if v]


__all__ = ["Probe", "clean", "name_words", "probe_for", "probe_key", "probe_ladder"]
