"""Put the request's id back on the SDK's HTTP 400 replies (P-REL-11).

For a POST body its JSON-RPC adapter refuses (nested 200+ deep, a batch,
``params`` as a list, no ``jsonrpc``, a lone surrogate escape), the SDK answers
400 with ``"id": null``: the client cannot tell which of its requests failed.
:func:`with_request_ids` keeps a bounded copy of the request body and, when
such a reply goes out, rewrites it with the error owed to each request id in
the body (:func:`~cartograph.server.jsonrpc_refusal.refusals_for`): one error
object for one request, an array for a batch. Anything else passes untouched,
and the status stays 400.

The SDK's 404 "Session not found" (an unknown, ended or expired session, or
one presented with another principal's token) gets Cartograph's code and
advice in the same way: ``data.code`` ``unknown_session`` and a message saying
to open a new session. Behind a balancer in sticky mode this is what the
sessions of a lost replica meet next (docs/fleet.md), and a bare "Session not
found" did not say what to do.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from cartograph import error_codes as codes
from cartograph.server.jsonrpc_refusal import refusals_for

SDK_UNKNOWN_SESSION = "Session not found"
UNKNOWN_SESSION_MESSAGE = (
    "session not found: it ended, expired, or was held by a replica that is gone; "
    "open a new session (initialize) and send the request again"
)


def with_request_ids(
    scope: Scope, receive: Receive, send: Send, *, limit: int
) -> tuple[Receive, Send]:
    """``receive``/``send`` for the SDK: the first tees the body, the second rewrites 400s."""
    if scope.get("method") != "POST":
        return receive, send
    body = bytearray()
    held: list[Message] = []

    async def teed() -> Message:
        message = await receive()
        if message["type"] == "http.request" and len(body) <= limit:
            body.extend(message.get("body", b"")[: limit + 1 - len(body)])
        return message

    async def rewriting(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] in (400, 404):
            held.append(message)
            return
        if not held:
            await send(message)
            return
        held.append(message)
        if message["type"] == "http.response.body" and message.get("more_body", False):
            return
        for out in _rewritten(held, bytes(body)):
            await send(out)
        held.clear()

    return teed, rewriting


def _rewritten(messages: list[Message], request: bytes) -> list[Message]:
    start, chunks = messages[0], messages[1:]
    reply = b"".join(m.get("body", b"") for m in chunks if m["type"] == "http.response.body")
    fixed = _with_ids(reply, request) if start["status"] == 400 else _coded_unknown_session(reply)
    if fixed is None:
        return messages
    headers = [
        (k, str(len(fixed)).encode("latin-1") if k.lower() == b"content-length" else v)
        for k, v in start.get("headers", [])
    ]
    return [{**start, "headers": headers}, {"type": "http.response.body", "body": fixed}]


def _with_ids(reply: bytes, request: bytes) -> bytes | None:
    """The reply with each owed error, or None to leave it as it was."""
    try:
        parsed: Any = json.loads(reply)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or parsed.get("id") is not None or "error" not in parsed:
        return None
    owed = [r.message_dict() for r in refusals_for(request)]
    if not owed:
        return None
    return json.dumps(owed[0] if len(owed) == 1 else owed).encode("utf-8")


def _coded_unknown_session(reply: bytes) -> bytes | None:
    """The SDK's "Session not found" with ``unknown_session`` and advice; None for anything else."""
    try:
        parsed: Any = json.loads(reply)
    except ValueError:
        return None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict) or error.get("message") != SDK_UNKNOWN_SESSION:
        return None
    error["message"] = UNKNOWN_SESSION_MESSAGE
    error["data"] = {"code": codes.UNKNOWN_SESSION}
    return json.dumps(parsed).encode("utf-8")
