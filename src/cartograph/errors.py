"""Cartograph's exception hierarchy.

Every error Cartograph raises on purpose derives from :class:`CartographError`
and carries a stable ``code`` (tests assert codes, never message text) and a
message that tells the operator what to do next. Library code raises; the CLI
maps errors to exit codes; the MCP surface maps them to tool errors.

    CartographError
    ├── ConfigError                 bad config file, mcpServers import, catalog snapshot
    ├── CatalogError                malformed catalog.json / queries.jsonl
    ├── CardError                   anything wrong with a capability card
    │   ├── CardFormatError         not loadable: duplicate keys, NaN, huge ints, bad shape
    │   ├── SignatureError          signature does not verify (tampering, mix-and-match)
    │   ├── UnknownKeyError         signed by a key outside the trust set or its scope
    │   ├── RevokedKeyError         signed by a revoked key
    │   ├── RollbackError           card version lower than one already accepted
    │   ├── KeyFileError            key file missing, unreadable or too permissive
    │   ├── GeneratorError          card generator failed (LLM endpoint down, junk reply)
    │   └── DriftError              upstream tool no longer matches its attested pin
    ├── NameCollisionError          two tools/servers collide after normalisation
    ├── RetrievalError              embedder / index / ranker problems
    │   ├── ModelIntegrityError     a shipped model file is missing or fails its sha256 pin
    │   └── PersistedIndexError     the persisted serving index differs from its own record
    ├── UpstreamError               talking to an upstream MCP server failed
    │   ├── UpstreamUnavailable     could not start or connect
    │   │   └── OAuthLoginRequired  an OAuth upstream has no usable token: `cartograph auth login`
    │   ├── UpstreamTimeout         deadline passed
    │   ├── UpstreamProtocolError   malformed or unexpected reply
    │   ├── CircuitOpen             breaker open; fail fast with retry-after
    │   ├── Overloaded              in-flight limit and queue are full
    │   ├── UpstreamRefused         the upstream answered with a JSON-RPC error (no such resource)
    │   ├── ResultTooLarge          a resource or prompt over [gateway] max_result_bytes (not cut)
    │   └── ToolFailed              the tool ran and reported an error (isError), seen by a stub
    ├── CallError                   a `call` the proxy refuses before any upstream I/O
    │   ├── UnknownToolError        no such server/tool in the verified catalog
    │   └── ArgumentError           arguments do not match the tool's input schema
    ├── PolicyError                 a catalog policy or authorization refuses the request
    │   └── AuthenticationError     no valid bearer token where one is required (HTTP 401)
    ├── SessionLimitError           a session cap (per principal or in total) is reached
    ├── StubError                   stub generation refused (output folder, server selection)
    ├── DemoError                   a `cartograph demo` check failed (what an agent should see)
    └── UsageLogError               the learning usage log cannot be opened, migrated or written
"""

from __future__ import annotations

from typing import Any


class CartographError(Exception):
    """Root of every error Cartograph raises deliberately."""

    code: str = "cartograph_error"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.details: dict[str, Any] = details

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe rendering for `--json` output and MCP tool errors."""
        return {"code": self.code, "message": self.message, **self.details}


class ConfigError(CartographError):
    code = "config_error"


class CatalogError(CartographError):
    code = "catalog_error"


class CardError(CartographError):
    code = "card_error"


class CardFormatError(CardError):
    code = "card_format"


class SignatureError(CardError):
    code = "bad_signature"


class UnknownKeyError(CardError):
    code = "unknown_key"


class RevokedKeyError(CardError):
    code = "revoked_key"


class RollbackError(CardError):
    code = "rollback"


class KeyFileError(CardError):
    code = "key_file"


class GeneratorError(CardError):
    code = "generator_error"


class DriftError(CardError):
    code = "drift"


class NameCollisionError(CartographError):
    code = "name_collision"


class RetrievalError(CartographError):
    code = "retrieval_error"


class PersistedIndexError(RetrievalError):
    """The persisted serving corpus was changed, truncated or removed; it is rebuilt."""

    code = "persisted_index_damaged"


class UpstreamError(CartographError):
    code = "upstream_error"


class UpstreamUnavailable(UpstreamError):
    code = "upstream_unavailable"


class OAuthLoginRequired(UpstreamUnavailable):
    """No usable OAuth token and no person to ask: run `cartograph auth login SERVER`."""

    code = "oauth_login_required"


class UpstreamTimeout(UpstreamError):
    code = "upstream_timeout"


class UpstreamProtocolError(UpstreamError):
    code = "upstream_protocol"


class CircuitOpen(UpstreamError):
    code = "circuit_open"


class Overloaded(UpstreamError):
    code = "overloaded"


class UpstreamRefused(UpstreamError):
    """The upstream is healthy and said no (unknown resource or prompt, bad arguments).

    Carries the upstream's JSON-RPC ``rpc_code``; it never counts against the breaker.
    """

    code = "upstream_refused"


class ResultTooLarge(UpstreamError):
    """A resource read or prompt over ``[gateway] max_result_bytes``: refused, never cut.

    A tool result is truncated with a marker; a resource's bytes (a blob, a
    document) are useless cut, so the read is refused naming the limit.
    """

    code = "result_too_large"


class CallError(CartographError):
    code = "call_error"


class UnknownToolError(CallError):
    code = "unknown_tool"


class ArgumentError(CallError):
    code = "bad_arguments"


class PolicyError(CartographError):
    code = "policy_denied"


class AuthenticationError(PolicyError):
    code = "unauthenticated"


class ModelIntegrityError(RetrievalError):
    code = "model_integrity"


class ToolFailed(UpstreamError):
    code = "tool_failed"


class SessionLimitError(CartographError):
    """A cap on downstream or upstream sessions is reached; nothing was opened.

    Not an :class:`UpstreamError`: the upstream did nothing wrong, so it must not
    count against that upstream's circuit breaker.
    """

    code = "session_limit"


class StubError(CartographError):
    code = "stub_error"


class DemoError(CartographError):
    code = "demo_failed"


class UsageLogError(CartographError):
    code = "usage_log"


__all__ = [
    "ArgumentError",
    "AuthenticationError",
    "CallError",
    "CardError",
    "CardFormatError",
    "CartographError",
    "CatalogError",
    "CircuitOpen",
    "ConfigError",
    "DemoError",
    "DriftError",
    "GeneratorError",
    "KeyFileError",
    "ModelIntegrityError",
    "NameCollisionError",
    "Overloaded",
    "PersistedIndexError",
    "PolicyError",
    "RetrievalError",
    "RevokedKeyError",
    "RollbackError",
    "SessionLimitError",
    "SignatureError",
    "StubError",
    "ToolFailed",
    "UnknownKeyError",
    "UnknownToolError",
    "UpstreamError",
    "UpstreamProtocolError",
    "UpstreamTimeout",
    "UpstreamUnavailable",
    "UsageLogError",
]
