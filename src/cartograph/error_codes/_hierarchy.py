"""The codes the error hierarchy's classes default to (``cartograph.errors``).

A class's own code stands where a raise site names nothing more specific.
docs/errors.md, "The hierarchy's default codes".
"""

from __future__ import annotations

from typing import Final

from cartograph.error_codes._registry import _code

# --- the hierarchy's default codes (cartograph.errors) -----------------------------------
CARTOGRAPH_ERROR: Final = _code("cartograph_error", "an error with no more specific code")
CONFIG_ERROR: Final = _code("config_error", "a configuration problem with no more specific code")
CATALOG_ERROR: Final = _code("catalog_error", "a catalog snapshot or queries file is unusable")
CARD_ERROR: Final = _code("card_error", "a capability card problem with no more specific code")
CARD_FORMAT: Final = _code("card_format", "a card file cannot be loaded as a card")
BAD_SIGNATURE: Final = _code("bad_signature", "a card's signature does not verify (tampering)")
UNKNOWN_KEY: Final = _code("unknown_key", "a card is signed by a key outside the trust set")
REVOKED_KEY: Final = _code("revoked_key", "a card is signed by a revoked key")
ROLLBACK: Final = _code("rollback", "a card's version is lower than one already accepted")
KEY_FILE: Final = _code("key_file", "a key or trust file problem with no more specific code")
GENERATOR_ERROR: Final = _code("generator_error", "a card generator failed")
DRIFT: Final = _code("drift", "an upstream tool no longer matches its attested pin")
NAME_COLLISION: Final = _code(
    "name_collision", "two servers or tools have the same name after normalisation"
)
NAME_RESERVED: Final = _code(
    "name_reserved", "a server or tool name equals a proxy tool's name after normalisation"
)
RETRIEVAL_ERROR: Final = _code("retrieval_error", "an embedder, index or ranker problem")
MODEL_INTEGRITY: Final = _code(
    "model_integrity", "a shipped model file is missing or fails its sha256 pin"
)
PERSISTED_INDEX_DAMAGED: Final = _code(
    "persisted_index_damaged",
    "the persisted serving corpus was changed or truncated; it is rebuilt",
)
UPSTREAM_ERROR: Final = _code("upstream_error", "talking to an upstream MCP server failed")
OAUTH_LOGIN_REQUIRED: Final = _code(
    "oauth_login_required", "an OAuth server with no usable token: run cartograph auth login"
)
OAUTH_UNREACHABLE: Final = _code(
    "oauth_unreachable", "an upstream's OAuth authorization server cannot be reached or fails (5xx)"
)
OAUTH_BAD_RESPONSE: Final = _code(
    "oauth_bad_response", "an upstream's OAuth authorization server answered something not OAuth"
)
OAUTH_NO_REGISTRATION: Final = _code("oauth_no_registration", "no DCR and no client configured")
UPSTREAM_UNAVAILABLE: Final = _code(
    "upstream_unavailable", "an upstream could not be started or reached"
)
UPSTREAM_TIMEOUT: Final = _code("upstream_timeout", "an upstream did not answer in time")
UPSTREAM_PROTOCOL: Final = _code(
    "upstream_protocol", "an upstream sent a malformed or unexpected message"
)
UPSTREAM_REFUSED: Final = _code(
    "upstream_refused",
    "the upstream is healthy and said no (unknown resource or prompt, bad arguments)",
)
RESULT_TOO_LARGE: Final = _code(
    "result_too_large", "a resource read or prompt is over [gateway] max_result_bytes"
)
CIRCUIT_OPEN: Final = _code(
    "circuit_open", "the upstream's circuit breaker is open; retry after the stated time"
)
OVERLOADED: Final = _code("overloaded", "the upstream's in-flight limit and queue are full")
TOOL_FAILED: Final = _code("tool_failed", "the tool ran and reported an error (seen by a stub)")
CALL_ERROR: Final = _code("call_error", "a call refused before any upstream I/O")
UNKNOWN_TOOL: Final = _code("unknown_tool", "no such server/tool in the verified catalog")
BAD_ARGUMENTS: Final = _code("bad_arguments", "arguments do not match the tool's input schema")
POLICY_DENIED: Final = _code("policy_denied", "a catalog policy or authorization refuses it")
UNAUTHENTICATED: Final = _code("unauthenticated", "no bearer token where one is required")
SESSION_LIMIT: Final = _code("session_limit", "a session cap (per principal or total) is reached")
SUBSCRIPTION_LIMIT: Final = _code(
    "subscription_limit", "a session holds [gateway] max_subscriptions_per_session subscriptions"
)
STUB_ERROR: Final = _code("stub_error", "stub generation refused")
DEMO_FAILED: Final = _code("demo_failed", "a `cartograph demo` check failed")
USAGE_LOG: Final = _code("usage_log", "the learning usage log cannot be used")
STATE_FILE_UNSAFE: Final = _code(
    "state_file_unsafe", "a state-directory file is a symlink out of it or not a regular file"
)
STATE_FILE_TOO_LARGE: Final = _code(
    "state_file_too_large", "a state-directory file is over its size limit; not read"
)
