"""Shaping what goes back to the agent: size limits and typed error results.

`call` returns the upstream's result unchanged, with two exceptions: a result
over the size limit is cut down and carries an explicit marker (P-REL-5), so
one chatty tool cannot flood the agent's context or the proxy's memory; and an
upstream *error* result has the configured secrets redacted (P-LOG-1).
Every refusal becomes an ``isError`` result whose structured content holds a
stable ``code`` the agent (and the tests) can act on.
"""

from __future__ import annotations

import json
from typing import Any, Final

from mcp.types import CallToolResult, TextContent

from cartograph.echo import MAX_MESSAGE, echoed
from cartograph.errors import CartographError
from cartograph.gateway.audit import Redactor

TRUNCATION_META_KEY: Final = "cartograph/truncated"
MARKER: Final = "[cartograph: result truncated: {size} bytes exceed the {limit} byte limit]"


def result_size(result: CallToolResult) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))


def limit_result(result: CallToolResult, max_bytes: int) -> CallToolResult:
    """``result`` if it fits, else a truncated copy with a marker block and a ``_meta`` flag."""
    size = result_size(result)
    if size <= max_bytes:
        return result
    budget = max(0, max_bytes - 512)
    kept: list[Any] = []
    for block in result.content:
        if budget <= 0:
            break
        if isinstance(block, TextContent):
            text = _cut_utf8(block.text, budget)
            kept.append(TextContent(text=text))
            budget -= len(text.encode("utf-8"))
        else:
            block_size = len(block.model_dump_json(by_alias=True).encode("utf-8"))
            if block_size <= budget:
                kept.append(block)
                budget -= block_size
    marker = MARKER.format(size=size, limit=max_bytes)
    kept.append(TextContent(text=marker))
    return CallToolResult(
        content=kept,
        structured_content=None,
        is_error=result.is_error,
        _meta={TRUNCATION_META_KEY: {"original_bytes": size, "limit_bytes": max_bytes}},
    )


def redact_error_result(result: CallToolResult, redact: Redactor) -> CallToolResult:
    """``result`` with configured secrets removed when the upstream reports an error.

    An upstream's error text is where its own environment (an API key it was
    given, a token in a failing URL) tends to surface; the operator's secrets
    must not reach the agent that way (P-LOG-1). Successful results are the
    tool's output and pass unchanged.
    """
    if not result.is_error or redact.empty:
        return result
    content = [
        block.model_copy(update={"text": redact(block.text)})
        if isinstance(block, TextContent)
        else block
        for block in result.content
    ]
    structured = result.structured_content
    return result.model_copy(
        update={
            "content": content,
            "structured_content": None if structured is None else redact.data(structured),
        }
    )


def _cut_utf8(text: str, max_bytes: int) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", errors="ignore")


def error_result(exc: CartographError, **extra: Any) -> CallToolResult:
    """An ``isError`` result for a refusal or failure; the text is what the agent reads.

    The message is kept to :data:`~cartograph.echo.MAX_MESSAGE` characters and each
    text detail to its echoed form: neither repeats a huge name the caller sent.
    """
    message = echoed(exc.message, MAX_MESSAGE)
    data = {**_bounded(exc.to_dict()), **extra, "message": message}
    return CallToolResult(
        content=[TextContent(text=f"error ({exc.code}): {message}")],
        structured_content={"error": _json_safe(data)},
        is_error=True,
    )


def _bounded(value: Any) -> Any:
    if isinstance(value, str):
        return echoed(value)
    if isinstance(value, dict):
        return {k: _bounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bounded(v) for v in value]
    return value


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def error_code(result: CallToolResult) -> str | None:
    """The Cartograph error code carried by an error result, if it is one of ours."""
    structured = result.structured_content
    if result.is_error and isinstance(structured, dict):
        error = structured.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            return str(error["code"])
    return None
