"""Codes of serving: retrieval, upstreams, the proxy's MCP surface and gateway, HTTP.

docs/errors.md, the sections from "Retrieval" to "HTTP-level refusals".
"""

from __future__ import annotations

from typing import Final

from cartograph.error_codes._registry import _code

# --- retrieval ----------------------------------------------------------------------
UNKNOWN_EMBEDDER: Final = _code("unknown_embedder", "no embedder by that name")
UNKNOWN_RANKER: Final = _code("unknown_ranker", "no ranker by that name")
BAD_K: Final = _code("bad_k", "k is outside the allowed range")
INDEX_STALE: Final = _code("index_stale", "an indexed tool is not on its verified card")
INDEX_NOT_READY: Final = _code("index_not_ready", "the index is not built yet")
TASK_TOO_LONG: Final = _code("task_too_long", "the discover task is over index.max_task_chars")
ADAPTER_BAD_SHAPE: Final = _code("adapter_bad_shape", "a query adapter is not a square matrix")
ADAPTER_UNREADABLE: Final = _code("adapter_unreadable", "a query adapter file cannot be read")
ADAPTER_MODEL_MISMATCH: Final = _code(
    "adapter_model_mismatch", "a query adapter was trained for another embedder"
)

# --- upstreams ----------------------------------------------------------------------
UPSTREAM_COMMAND_NOT_FOUND: Final = _code(
    "upstream_command_not_found", "a stdio server's command does not exist"
)
UPSTREAM_SPAWN_FAILED: Final = _code(
    "upstream_spawn_failed", "a stdio server's command cannot be executed"
)
UPSTREAM_EXITED: Final = _code("upstream_exited", "a stdio server exited while connecting")
UPSTREAM_CLOSED: Final = _code("upstream_closed", "the upstream closed the connection")
UPSTREAM_HTTP_STATUS: Final = _code(
    "upstream_http_status", "an HTTP upstream answered with an error status"
)
UPSTREAM_UNREACHABLE: Final = _code("upstream_unreachable", "an HTTP upstream cannot be reached")
UPSTREAM_RPC_ERROR: Final = _code("upstream_rpc_error", "the upstream answered a JSON-RPC error")
UPSTREAM_SESSION_CLOSED: Final = _code(
    "upstream_session_closed", "a call on an upstream session that is already closed"
)
SHUTTING_DOWN: Final = _code("shutting_down", "the proxy is shutting down")

# --- the proxy's MCP surface and gateway ----------------------------------------------
BAD_META_CALL: Final = _code(
    "bad_meta_call", "a malformed `call` (server/tool/arguments not as documented)"
)
ARGUMENT_HIDDEN: Final = _code("argument_hidden", "the call sets an argument the operator fills in")
TRANSFORM_MISMATCH: Final = _code("transform_mismatch", "the mapped call fails the upstream schema")
UNKNOWN_PROXY_TOOL: Final = _code("unknown_proxy_tool", "the proxy has no tool by that name")
TOOL_DENIED: Final = _code("tool_denied", "the catalog's allow/deny policy refuses the tool")
TOOL_NOT_EXPOSED: Final = _code(
    "tool_not_exposed", "the routed catalog named does not expose the tool"
)
UNKNOWN_RESOURCE: Final = _code(
    "unknown_resource", "no such resource in this catalog (or one the principal cannot reach)"
)
UNKNOWN_PROMPT: Final = _code("unknown_prompt", "no such prompt in this catalog")
RESOURCE_DENIED: Final = _code(
    "resource_denied", "the catalog's allow/deny policy refuses the resource"
)
PROMPT_DENIED: Final = _code("prompt_denied", "the catalog's allow/deny policy refuses the prompt")
SECRET_IN_ARGUMENTS: Final = _code(
    "secret_in_arguments",
    "the arguments carry a secret (a credential's format, or an operator credential); not sent",
)
RESOURCES_OFF: Final = _code(
    "resources_off", "the catalog does not pass upstream resources through"
)
PROMPTS_OFF: Final = _code("prompts_off", "the catalog does not pass upstream prompts through")
RESOURCE_URI_AMBIGUOUS: Final = _code(
    "resource_uri_ambiguous",
    "a resource URI spelling upstreams read differently (encoded /, \\ or %, control chars)",
)
PROMPT_NAME_AMBIGUOUS: Final = _code(
    "prompt_name_ambiguous", "a prompt name with control or format characters, or not in NFC"
)
RESOURCE_URI_TOO_LONG: Final = _code(
    "resource_uri_too_long", "a resource URI over 8192 characters, refused before it is read"
)
PROMPT_NAME_TOO_LONG: Final = _code(
    "prompt_name_too_long", "a prompt name over 8192 characters, refused before it is read"
)
SAMPLING_NOT_SUPPORTED: Final = _code(
    "sampling_not_supported",
    "an upstream asked for a model sample; the client declared no sampling",
)
ELICITATION_NOT_SUPPORTED: Final = _code(
    "elicitation_not_supported",
    "an upstream asked for user input; the client declared no elicitation",
)
INPUT_REQUEST_UNROUTED: Final = _code(
    "input_request_unrouted",
    "an upstream asked for input with no single client's call in flight on its session",
)
INPUT_REQUEST_FAILED: Final = _code(
    "input_request_failed",
    "the client refused, failed or did not answer a forwarded sampling or elicitation request",
)
CATALOG_FORBIDDEN: Final = _code("catalog_forbidden", "the principal may not use that catalog")
CATALOG_REQUIRED: Final = _code("catalog_required", "the request must name a catalog")
BAD_TOKEN: Final = _code("bad_token", "the bearer token is not valid here")
STARTING: Final = _code("starting", "the catalog is still starting; retry in a moment")
INTERNAL_ERROR: Final = _code("internal_error", "a bug in Cartograph; the call was not made")

# --- HTTP-level refusals (data.code of a JSON-RPC error, or the audit outcome) ---------
CONFLICTING_CATALOG: Final = _code(
    "conflicting_catalog", "the path and ?catalog= name different catalogs"
)
CATALOG_ON_ROUTED_MOUNT: Final = _code(
    "catalog_on_routed_mount", "?catalog= on the routed mount, which takes it as an argument"
)
MISDIRECTED_HOST: Final = _code("misdirected_host", "the Host header does not name this server")
ORIGIN_FORBIDDEN: Final = _code("origin_forbidden", "the Origin header is not allow-listed")
BAD_REQUEST: Final = _code("bad_request", "audit outcome: the MCP SDK answered HTTP 400")
UNKNOWN_SESSION: Final = _code(
    "unknown_session", "the MCP session id is unknown here (ended, expired, or its replica is gone)"
)
METHOD_NOT_ALLOWED: Final = _code("method_not_allowed", "audit outcome: HTTP 405")
NOT_ACCEPTABLE: Final = _code("not_acceptable", "audit outcome: HTTP 406 (Accept header)")
BODY_TOO_LARGE: Final = _code("body_too_large", "audit outcome: the request body is too large")
UNSUPPORTED_MEDIA_TYPE: Final = _code(
    "unsupported_media_type", "audit outcome: HTTP 415 (Content-Type)"
)
