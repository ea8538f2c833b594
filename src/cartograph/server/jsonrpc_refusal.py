"""A JSON-RPC error for every request the SDK cannot parse but that carries an id (P-REL-11).

The SDK validates each incoming message with one pydantic adapter; whatever
fails (arguments nested 200+ deep, a batch, ``params`` as a list, a missing or
wrong ``jsonrpc``, a lone UTF-16 surrogate escape, ``method`` not a string) is
logged and dropped on stdio and answered with ``"id": null`` over HTTP, so
the client waiting on that id hangs or cannot tell which request failed.

:func:`refusals_for` looks at such a message with a more forgiving reader —
Python's ``json`` (which accepts lone surrogates and nests to ~1,000), then a
depth-1 scanner for anything deeper — and returns one error per request id it
finds: a single request, or each request of a batch (batches are not part of
MCP). A message without a recoverable id (a notification, a response, noise)
gets nothing, as JSON-RPC says; nor does an id holding a lone surrogate, which
cannot be written back as valid UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
MAX_DEPTH: Final = 200
"""Nesting the SDK's JSON parser accepts; a message nested deeper cannot be processed."""
MAX_ID_DIGITS: Final = 18
"""An integer id longer than this is not echoed (it would not survive a 64-bit client)."""

RequestId = str | int


@dataclass(frozen=True, slots=True)
class Refusal:
    """The error response owed to one request."""

    id: RequestId
    code: int
    message: str

    def message_dict(self) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": self.message},
        }


def refusals_for(raw: str | bytes) -> list[Refusal]:
    """The errors owed for a message the SDK refused (empty when no request id is recoverable).

    Never raises: it runs inside the transport's reader, where an exception
    would end the whole connection.
    """
    try:
        return _refusals(raw)
    except Exception:  # a bug here must cost one reply, never the connection
        return []


def _refusals(raw: str | bytes) -> list[Refusal]:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    try:
        value = json.loads(text)
    except RecursionError:
        return _from_scan(text, INVALID_REQUEST, f"the message is nested over {MAX_DEPTH} deep")
    except json.JSONDecodeError as exc:
        return _from_scan(text, PARSE_ERROR, f"not valid JSON ({exc.msg})")
    except ValueError:  # e.g. an integer past Python's digit limit
        return _from_scan(text, PARSE_ERROR, "not valid JSON (a number is too long)")
    if isinstance(value, list):
        return [
            Refusal(rid, INVALID_REQUEST, "batches are not supported: send one request per message")
            for rid in (_request_id(item) for item in value)
            if rid is not None
        ]
    rid = _request_id(value)
    if rid is None:
        return []
    code, message = _why(value)
    return [Refusal(rid, code, message)]


def _request_id(value: Any) -> RequestId | None:
    """The id of something that looks like a request (has a method), if it can be echoed."""
    if not isinstance(value, dict) or "method" not in value:
        return None
    rid = value.get("id")
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        return None
    if isinstance(rid, int) and abs(rid) >= 10**MAX_ID_DIGITS:
        return None
    if isinstance(rid, str) and not _encodable(rid):
        return None
    return rid


def _why(request: dict[str, Any]) -> tuple[int, str]:
    """The first reason the SDK cannot take ``request``, as a JSON-RPC code and message."""
    if request.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'the request needs "jsonrpc": "2.0"'
    if not isinstance(request.get("method"), str):
        return INVALID_REQUEST, '"method" must be a string'
    if "params" in request and not isinstance(request["params"], dict):
        return INVALID_PARAMS, '"params" must be an object'
    if _depth(request) > MAX_DEPTH:
        return INVALID_REQUEST, f"the request is nested over {MAX_DEPTH} deep"
    if not all(_encodable(s) for s in _strings(request)):
        return PARSE_ERROR, "the request holds a lone UTF-16 surrogate (\\ud800-\\udfff escape)"
    return INVALID_REQUEST, "the request does not match the JSON-RPC message schema"


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _depth(value: Any) -> int:
    """Nesting depth of containers, iteratively (a deep message must not recurse here)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _from_scan(text: str, code: int, message: str) -> list[Refusal]:
    """For text ``json`` cannot read: a top-level ``id`` beside a top-level ``method``."""
    found = _top_level(text)
    rid = found.get("id")
    if "method" not in found or rid is None:
        return []
    return [Refusal(rid, code, message)]


def _top_level(text: str) -> dict[str, RequestId | None]:
    """Depth-1 keys of an object and their scalar values (None when not a usable id)."""
    found: dict[str, RequestId | None] = {}
    depth, i, key, expect_value = 0, 0, None, False
    while i < len(text):
        char = text[i]
        if char == '"':
            end = _string_end(text, i)
            if depth == 1 and not expect_value:
                key = _loads(text[i : end + 1])
            elif depth == 1 and expect_value and isinstance(key, str):
                value = _loads(text[i : end + 1])
                found[key] = value if isinstance(value, str) and _encodable(value) else None
                key, expect_value = None, False
            i = end + 1
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif depth == 1 and char == ":" and isinstance(key, str):
            expect_value = True
        elif depth == 1 and expect_value and (char == "-" or char.isdigit()):
            end = i + 1
            while end < len(text) and text[end].isdigit():
                end += 1
            digits = text[i:end].lstrip("-")
            integral = 0 < len(digits) <= MAX_ID_DIGITS and (
                end == len(text) or text[end] not in ".eE"
            )
            found[str(key)] = int(text[i:end]) if integral else None
            key, expect_value, i = None, False, end
            continue
        elif depth == 1 and expect_value and not char.isspace():
            found[str(key)] = None  # an object, array, true/false/null: not an id we echo
            key, expect_value = None, False
            continue  # re-read this char: it may open a container
        i += 1
    return found


def _string_end(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return len(text) - 1


def _loads(token: str) -> Any:
    try:
        return json.loads(token)
    except ValueError:
        return None
