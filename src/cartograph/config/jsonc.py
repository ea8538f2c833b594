"""JSON with comments (VS Code's and Cursor's ``mcp.json``): read it, and edit it in place.

Reading: comments (``//``, ``/* */``) and trailing commas become spaces of
the same length, newlines kept, so the plain JSON parser runs on text whose
every offset, line and column is the original's (errors point at the real
line). Editing: the same blanked text gives the exact spans of the members
of an object; an entry is replaced, added or removed by splicing those spans
in the original text, so every comment and every other byte stays as written
(a removed entry takes along only its own comments: the whole-comment lines
right above it and a comment after it on its last line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from cartograph import error_codes as codes
from cartograph.errors import ConfigError

_WS: Final = " \t\r\n"


def blank_comments(text: str) -> str:
    """``text`` with comments and trailing commas replaced by spaces (same length, same lines)."""
    out = list(text)
    i, n = 0, len(text)
    last_comma: int | None = None  # a comma that is trailing if the next token closes
    while i < n:
        c = text[i]
        if c == '"':
            i = _string_end(text, i)
            last_comma = None
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            _blank(out, i, end)
            i = end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            _blank(out, i, end)
            i = end
            continue
        if c == ",":
            last_comma = i
        elif c in "}]" and last_comma is not None:
            out[last_comma] = " "
            last_comma = None
        elif c not in _WS:
            last_comma = None
        i += 1
    return "".join(out)


def _blank(out: list[str], start: int, end: int) -> None:
    for j in range(start, end):
        if out[j] != "\n":
            out[j] = " "


def _string_end(text: str, start: int) -> int:
    """The offset just past the string literal opening at ``start``."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return len(text)


def loads(text: str, *, where: str, code: str = codes.CLIENT_CONFIG_JSON, **options: Any) -> Any:
    """Parse JSONC; a syntax error names ``where``, the line and the column."""
    try:
        return json.loads(blank_comments(text), **options)
    except (json.JSONDecodeError, RecursionError) as exc:
        if not isinstance(exc, json.JSONDecodeError):
            raise ConfigError(f"{where}: nested too deeply", code=code, file=where) from None
        raise ConfigError(
            f"{where}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            code=code,
            file=where,
            line=exc.lineno,
        ) from None


@dataclass(frozen=True)
class Member:
    """One ``"key": value`` of an object, as offsets into the text."""

    key: str
    start: int  # the key's opening quote
    value_start: int
    end: int  # just past the value


def members(blanked: str, open_brace: int) -> tuple[list[Member], int]:
    """The members of the object opening at ``open_brace``, and its closing brace's offset."""
    decoder = json.JSONDecoder()
    found: list[Member] = []
    i = _skip_ws(blanked, open_brace + 1)
    while blanked[i] != "}":
        key, after_key = decoder.raw_decode(blanked, i)
        colon = _skip_ws(blanked, after_key)
        value_start = _skip_ws(blanked, colon + 1)
        _, end = decoder.raw_decode(blanked, value_start)
        found.append(Member(str(key), i, value_start, end))
        i = _skip_ws(blanked, end)
        if blanked[i] == ",":
            i = _skip_ws(blanked, i + 1)
    return found, i


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def set_entry(text: str, container: str, name: str, value: Any) -> str:
    """``text`` with ``container.name`` set to ``value``; everything else byte for byte."""
    blanked = blank_comments(text)
    top = blanked.index("{")
    top_members, top_close = members(blanked, top)
    box = next((m for m in top_members if m.key == container), None)
    if box is None:
        body = {name: value}
        return _insert(text, blanked, top_members, top_close, container, body, depth=1)
    if blanked[box.value_start] != "{":
        raise ConfigError(f"{container!r} is not an object", code=codes.CLIENT_CONFIG_SHAPE)
    inner, close = members(blanked, box.value_start)
    existing = next((m for m in inner if m.key == name), None)
    if existing is not None:
        rendered = _render(value, _indent_of(text, existing.start))
        return text[: existing.value_start] + rendered + text[existing.end :]
    return _insert(text, blanked, inner, close, name, value, depth=2)


def _insert(
    text: str, blanked: str, siblings: list[Member], close: int, key: str, value: Any, depth: int
) -> str:
    indent = _indent_of(text, siblings[-1].start) if siblings else "  " * depth
    member = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, indent)}"
    if siblings:
        last = siblings[-1].end
        comma = _skip_ws(blanked, last)
        if blanked[comma] == ",":  # a trailing comma (JSONC): keep the file's style
            return text[: comma + 1] + f"\n{indent}{member}," + text[comma + 1 :]
        eol = text.find("\n", last)
        eol = len(text) if eol < 0 else eol
        if _whole_comment(text[last:eol].strip()):  # the last member's comment stays with it
            return text[:last] + "," + text[last:eol] + f"\n{indent}{member}" + text[eol:]
        return text[:last] + f",\n{indent}{member}" + text[last:]
    head = blanked.rfind("{", 0, close) + 1
    outer = indent[:-2]
    return text[:head] + f"\n{indent}{member}\n{outer}" + text[close:].lstrip(_WS)


def _indent_of(text: str, offset: int) -> str:
    line = text.rfind("\n", 0, offset) + 1
    prefix = text[line:offset]
    return prefix if prefix.strip() == "" and prefix else "  "


def _render(value: Any, indent: str) -> str:
    rendered = json.dumps(value, indent=2, ensure_ascii=False)
    return rendered.replace("\n", "\n" + indent)


def remove_entry(text: str, container: str, name: str) -> str:
    """``text`` without ``container.name`` (and its comma); unchanged when absent."""
    blanked = blank_comments(text)
    top_members, _ = members(blanked, blanked.index("{"))
    box = next((m for m in top_members if m.key == container), None)
    if box is None or blanked[box.value_start] != "{":
        return text
    inner, _ = members(blanked, box.value_start)
    index = next((i for i, m in enumerate(inner) if m.key == name), None)
    if index is None:
        return text
    target = inner[index]
    start = _comments_above(text, _line_start(text, target.start))
    after = _skip_ws(text, target.end)  # the raw text: a trailing comma is blanked
    if after < len(text) and text[after] == ",":  # its own comma goes with it
        return text[:start] + text[_line_end(text, after + 1) :]
    if index > 0:  # the last: the previous member's comma goes instead
        comma = _skip_ws(blanked, inner[index - 1].end)
        cut = text[:comma] + " " + text[comma + 1 : start] + text[_line_end(text, target.end) :]
        return cut.replace(" \n", "\n") if text[comma + 1 : comma + 2] == "\n" else cut
    return text[:start] + text[_line_end(text, target.end) :]


def _line_end(text: str, offset: int) -> int:
    """Past the newline when only whitespace, or a comment about the removed member, follows
    ``offset`` on its line; else ``offset``."""
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    rest = text[offset:end].strip()
    return end + 1 if (rest == "" or _whole_comment(rest)) and end < len(text) else offset


def _comments_above(text: str, start: int) -> int:
    """``start`` moved up over the comment lines right above it (they describe that member)."""
    while start > 0:
        above = text.rfind("\n", 0, start - 1) + 1
        if not _whole_comment(text[above : start - 1].strip()):
            return start
        start = above
    return start


def _whole_comment(line: str) -> bool:
    """One comment and nothing else (a block comment only when it closes on the line)."""
    if line.startswith("//"):
        return True
    return line.startswith("/*") and line.endswith("*/") and "*/" not in line[2:-2]


def _line_start(text: str, offset: int) -> int:
    """The start of ``offset``'s line when only whitespace precedes it there, else ``offset``."""
    line = text.rfind("\n", 0, offset) + 1
    return line if text[line:offset].strip() == "" else offset
