"""The secret scan: which secrets a call's data holds, and that data with them taken out.

Two sources find secrets (docs/gateway.md, Secrets): the detect-secrets format
rules of :mod:`cartograph.gateway.detectors`, and the operator's own upstream
credentials, by exact value: every value the audit :class:`~cartograph.gateway.audit.Redactor`
removes (secret env values, header values, OAuth and ``[[http.tokens]]`` tokens,
the LLM key; see ``config/secrets.py``). What the scan reports is a secret's
*class* (``AWS Access Key``, ``Operator Credential``), never its value: that is all
an audit record or a refusal may say.

Only text is read: text blocks, embedded text resources, structured content and
the keys and strings of arguments. Images, audio and blobs are base64 of binary
data and pass unread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeVar

from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)

from cartograph.gateway.audit import Redactor
from cartograph.gateway.detectors import Detectors, detectors

OPERATOR_CREDENTIAL: Final = "Operator Credential"
"""The class of a secret found by exact value: one of the operator's own credentials."""
MARKER: Final = "[redacted secret: {kind}]"
"""What takes a redacted secret's place in a result."""
WHOLE_STRING_KINDS: Final = frozenset({"Private Key"})
"""Classes found by a header line: the key body after it has no pattern, so the whole
string that holds one is replaced."""

_B = TypeVar("_B")


class SecretScan:
    """The detectors plus one runtime's credentials; cheap to make, one per request."""

    def __init__(self, credentials: Iterable[str] = (), rules: Detectors | None = None) -> None:
        self._credentials = tuple(credentials)
        self._rules = rules if rules is not None else detectors()

    @classmethod
    def of(cls, redactor: Redactor) -> SecretScan:
        """The scan for a runtime: its redactor's values are the operator's credentials."""
        return cls(redactor.values)

    def spans(self, text: str) -> list[tuple[str, int, int]]:
        """``(kind, start, end)`` of every secret in ``text``, by start."""
        found = list(self._rules.find(text))
        for secret in self._credentials:
            start = text.find(secret)
            while start >= 0:
                found.append((OPERATOR_CREDENTIAL, start, start + len(secret)))
                start = text.find(secret, start + len(secret))
        return sorted(found, key=lambda span: (span[1], -span[2]))

    def kinds(self, value: Any) -> tuple[str, ...]:
        """The classes of secret anywhere in a JSON-like value (keys included), in order found.

        Its strings are read as one text, one line each: one pass of the rules, not one
        per string (a chance match across two lines can only over-report).
        """
        strings: list[str] = []
        _collect(value, strings)
        return tuple(dict.fromkeys(kind for kind, _start, _end in self.spans("\n".join(strings))))

    def redact(self, text: str, *, redact: bool = True) -> tuple[str, dict[str, None]]:
        """``text`` with each secret replaced by :data:`MARKER` (if ``redact``), and the classes."""
        spans = self.spans(text)
        kinds = dict.fromkeys(kind for kind, _start, _end in spans)
        if not redact or not spans:
            return text, kinds
        if kinds.keys() & WHOLE_STRING_KINDS:
            first = next(kind for kind in kinds if kind in WHOLE_STRING_KINDS)
            return MARKER.format(kind=first), kinds
        return _replaced(text, spans), kinds

    def redact_data(self, value: Any, *, redact: bool = True) -> tuple[Any, dict[str, None]]:
        """A JSON-like ``value`` with its strings (keys too) redacted, and the classes found.

        Nothing found (the common case, checked in one pass): ``value`` itself comes back.
        """
        kinds = dict.fromkeys(self.kinds(value))
        if not kinds or not redact:
            return value, kinds
        return self._walk(value, {}, redact), kinds

    def _walk(self, value: Any, kinds: dict[str, None], redact: bool) -> Any:
        if isinstance(value, str):
            text, found = self.redact(value, redact=redact)
            kinds.update(found)
            return text
        if isinstance(value, Mapping):
            pairs = [
                (self._walk(k, kinds, redact), self._walk(v, kinds, redact))
                for k, v in value.items()
            ]
            changed = any(
                k is not k0 or v is not v0
                for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)
            )
            return dict(pairs) if changed else value
        if isinstance(value, list | tuple):
            items = [self._walk(v, kinds, redact) for v in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        return value

    # -- MCP results -----------------------------------------------------------------------

    def call_result(
        self, result: CallToolResult, *, redact: bool
    ) -> tuple[CallToolResult, tuple[str, ...]]:
        """A tool result with its secrets redacted (when ``redact``), and their classes."""
        kinds: dict[str, None] = {}
        content = [self._block(block, kinds, redact) for block in result.content]
        structured, found = self.redact_data(result.structured_content, redact=redact)
        kinds.update(found)
        if not redact or not kinds:
            return result, tuple(kinds)
        update = {"content": content, "structured_content": structured}
        return result.model_copy(update=update), tuple(kinds)

    def read_result(
        self, result: ReadResourceResult, *, redact: bool
    ) -> tuple[ReadResourceResult, tuple[str, ...]]:
        """A resource read with its text contents redacted (when ``redact``), and the classes."""
        kinds: dict[str, None] = {}
        contents = [self._contents(c, kinds, redact) for c in result.contents]
        if not redact or not kinds:
            return result, tuple(kinds)
        return result.model_copy(update={"contents": contents}), tuple(kinds)

    def prompt_result(
        self, result: GetPromptResult, *, redact: bool
    ) -> tuple[GetPromptResult, tuple[str, ...]]:
        """A rendered prompt with its text messages redacted (when ``redact``), and the classes."""
        kinds: dict[str, None] = {}
        messages = [
            m.model_copy(update={"content": self._block(m.content, kinds, redact)})
            for m in result.messages
        ]
        if not redact or not kinds:
            return result, tuple(kinds)
        return result.model_copy(update={"messages": messages}), tuple(kinds)

    def _block(self, block: _B, kinds: dict[str, None], redact: bool) -> _B:
        if isinstance(block, TextContent):
            text = self._walk(block.text, kinds, redact)
            return block.model_copy(update={"text": text}) if text is not block.text else block
        if isinstance(block, EmbeddedResource):
            inner = self._contents(block.resource, kinds, redact)
            return (
                block.model_copy(update={"resource": inner})
                if inner is not block.resource
                else block
            )
        return block

    def _contents(self, contents: _B, kinds: dict[str, None], redact: bool) -> _B:
        if isinstance(contents, TextResourceContents):
            text = self._walk(contents.text, kinds, redact)
            return (
                contents.model_copy(update={"text": text})
                if text is not contents.text
                else contents
            )
        return contents


def redacted_shape(shape: Any, seen: Mapping[str, tuple[str, ...]]) -> Any:
    """An argument shape (keys only) for the audit record, with any key that is a secret
    redacted when the scan saw one in the arguments (values never reach a shape)."""
    return SecretScan().redact_data(shape)[0] if seen.get("arguments") else shape


def _replaced(text: str, spans: list[tuple[str, int, int]]) -> str:
    """``text`` with each span (by start) replaced by a marker naming its class.

    A span that overlaps the one before widens that one's marker instead.
    """
    parts: list[str] = []
    at = 0
    for kind, start, end in spans:
        if start < at:
            at = max(at, end)
            continue
        parts.extend((text[at:start], MARKER.format(kind=kind)))
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _collect(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _collect(key, into)
            _collect(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, into)
