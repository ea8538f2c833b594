"""Every error code Cartograph emits, in one registry, each with a one-line meaning.

A code is the stable part of an error: tests assert it, agents branch on it and
operators search the docs for it, while the message around it may change. So
codes live here as named constants and raise sites use the constant
(``code=codes.CONFIG_MISSING``), never a string literal; a typo then fails at
import or type-check time instead of silently minting a new, undocumented code.

:data:`REGISTRY` maps each code to its meaning. ``docs/errors.md`` (and the
area tables it links to) document exactly these codes, and
``tests/test_error_codes.py`` checks the two against each other both ways. A
constant's name is its code in upper case.

Where a code reaches users (CLI, MCP tool error, JSON-RPC refusal, audit): docs/errors.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

_MEANINGS: dict[str, str] = {}


def _code(code: str, meaning: str) -> str:
    """Register ``code`` with its one-line meaning; a code registered twice is a bug."""
    if code in _MEANINGS:
        raise ValueError(f"error code {code!r} is registered twice")
    _MEANINGS[code] = meaning
    return code


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

# --- config files and command-line configuration ----------------------------------------
CONFIG_MISSING: Final = _code(
    "config_missing", "the config file (or an imported JSON) does not exist or is unreadable"
)
CONFIG_TOO_LARGE: Final = _code("config_too_large", "a config file is over the 1 MiB limit")
CONFIG_TOML: Final = _code("config_toml", "TOML syntax error, or the file is not UTF-8")
CONFIG_MCP_JSON: Final = _code(
    "config_mcp_json", "an imported file is not JSON or has no mcpServers/servers object"
)
CONFIG_MCP_JSON_AMBIGUOUS: Final = _code(
    "config_mcp_json_ambiguous", "an imported file has both mcpServers and servers"
)
CONFIG_DUPLICATE_KEY: Final = _code(
    "config_duplicate_key", "a key written twice in one object of an imported JSON file"
)
CONFIG_UNKNOWN_KEY: Final = _code("config_unknown_key", "a key Cartograph does not know")
CONFIG_MISSING_KEY: Final = _code("config_missing_key", "a required key is absent")
CONFIG_MISSING_COMMAND: Final = _code("config_missing_command", "a stdio server without a command")
CONFIG_BAD_URL: Final = _code(
    "config_bad_url", "an HTTP/SSE server without an absolute http(s) URL"
)
CONFIG_CONFLICTING_TRANSPORT: Final = _code(
    "config_conflicting_transport",
    "a server sets both command and url, or a transport that does not match them",
)
CONFIG_DUPLICATE_SERVER: Final = _code(
    "config_duplicate_server", "the same server name is defined twice"
)
CONFIG_RESERVED_NAME: Final = _code(
    "config_reserved_name", "a server is named like one of the proxy's own tools"
)
CONFIG_BAD_NAME: Final = _code(
    "config_bad_name", "a server name outside the allowed characters or length"
)
CONFIG_ENV_VAR: Final = _code("config_env_var", "${VAR} with VAR unset and no default")
CONFIG_UNKNOWN_VARIABLE: Final = _code(
    "config_unknown_variable", "a ${...} form Cartograph does not know"
)
CONFIG_INPUT_VARIABLE: Final = _code(
    "config_input_variable", "a VS Code ${input:id}, which only VS Code can prompt for"
)
CONFIG_ENV_FILE: Final = _code(
    "config_env_file", "a client entry's envFile cannot be read or has a line that is not KEY=VALUE"
)
CONFIG_INVALID: Final = _code("config_invalid", "a value of the wrong type or range")
DUPLICATE_PRINCIPAL: Final = _code(
    "duplicate_principal", "two [[http.tokens]] entries name one principal"
)
DUPLICATE_TOKEN: Final = _code(
    "duplicate_token", "two [[http.tokens]] entries share a token variable or a token value"
)
NO_SERVERS: Final = _code("no_servers", "the config names no servers")
TOKEN_ENV_MISSING: Final = _code(
    "token_env_missing", "the variable a [[http.tokens]] entry reads is unset or empty"
)
BAD_CATALOG_NAME: Final = _code("bad_catalog_name", "a catalog name is not usable in a URL path")
DUPLICATE_CATALOG: Final = _code("duplicate_catalog", "a catalog is declared twice")
CATALOG_NAME_RESERVED: Final = _code(
    "catalog_name_reserved", "a catalog is named like the routed mount's own path"
)
BAD_MOUNT_MODE: Final = _code("bad_mount_mode", "http.mount_mode is not a known mount mode")
BAD_TOOL_PREFIX: Final = _code("bad_tool_prefix", "a catalog's tool_prefix has bad characters")
PREFIX_WITH_ROUTING: Final = _code(
    "prefix_with_routing", "a catalog sets tool_prefix while the routed mount is on"
)
UNKNOWN_CATALOG_SERVER: Final = _code(
    "unknown_catalog_server", "a catalog names a server that is not configured"
)
ALLOWED_HOSTS_REQUIRED: Final = _code(
    "allowed_hosts_required", "a wildcard bind without http.allowed_hosts"
)
REMOTE_BIND_NEEDS_FLAG: Final = _code(
    "remote_bind_needs_flag", "a non-loopback bind without --allow-remote"
)
REMOTE_BIND_NEEDS_AUTH: Final = _code(
    "remote_bind_needs_auth", "a non-loopback bind without [[http.tokens]]"
)
BIND_FAILED: Final = _code("bind_failed", "the HTTP server cannot bind its host and port")
BAD_CATALOGS: Final = _code(
    "bad_catalogs", "the HTTP server was given no catalogs or two with one name"
)
NO_CATALOGS: Final = _code("no_catalogs", "the routed mount was given no catalog")
ROUTED_ARGUMENT_CLASH: Final = _code(
    "routed_argument_clash", "a tool already has the argument the routed mount adds"
)
UNKNOWN_CATALOG: Final = _code("unknown_catalog", "no catalog by that name (or not reachable)")
CATALOG_NAME_REQUIRED: Final = _code(
    "catalog_name_required", "several catalogs are configured; choose one with --catalog-name"
)
UNKNOWN_SERVER: Final = _code("unknown_server", "no server by that name in the federation")
UNKNOWN_CLIENT: Final = _code("unknown_client", "connect --client names an unknown client")
CLIENT_CONFIG_JSON: Final = _code(
    "client_config_json", "a client's MCP config file is not valid JSON"
)
CLIENT_CONFIG_SHAPE: Final = _code(
    "client_config_shape", "a client's MCP config file has the servers key as a non-object"
)
NO_CLIENT_PROJECT: Final = _code("no_client_project", "no client record; run connect --url first")
BAD_CLIENT_PROJECT: Final = _code(
    "bad_client_project", "the client record file is not one Cartograph wrote"
)
HEALTH_UNREACHABLE: Final = _code("health_unreachable", "the server's /health cannot be read")
HEALTH_SHAPE: Final = _code("health_shape", "the server's /health did not return an object")
NO_VISIBLE_CATALOGS: Final = _code(
    "no_visible_catalogs", "the server lists no catalog this token may reach"
)
UNKNOWN_SCOPE: Final = _code(
    "unknown_scope", "connect --scope names a scope the client does not have"
)
ADOPT_DUPLICATE_SERVER: Final = _code(
    "adopt_duplicate_server", "connect --adopt would clash with a configured server"
)
ADOPT_BAD_ENTRY: Final = _code(
    "adopt_bad_entry", "connect --adopt found an entry that is not an object"
)
BRIDGE_TOKEN_MISSING: Final = _code("bridge_token_missing", "bridge --token-env VAR with VAR unset")
OAUTH_NEEDS_HTTP: Final = _code("oauth_needs_http", 'auth = "oauth" on a stdio server')
OAUTH_NOT_CONFIGURED: Final = _code(
    "oauth_not_configured", 'auth login/logout for a server without auth = "oauth"'
)
OAUTH_NO_STORE: Final = _code(
    "oauth_no_store", "an OAuth server config built without the loader and without oauth.store"
)
OAUTH_STORE_CORRUPT: Final = _code(
    "oauth_store_corrupt", "the OAuth token store is not what Cartograph wrote"
)
OAUTH_BAD_CLIENT: Final = _code("oauth_bad_client", "oauth client settings that do not fit")
OAUTH_CLIENT_SECRET_MISSING: Final = _code("oauth_client_secret_missing", "no client secret")
BAD_OPTION: Final = _code(
    "bad_option", "a command-line option value is out of range or inconsistent"
)
BAD_GATEWAY_MODE: Final = _code("bad_gateway_mode", "serve --mode is not pooled or oneshot")
BAD_GENERATOR: Final = _code("bad_generator", "--generator is not template or llm")
BAD_DATE: Final = _code("bad_date", "--before is not a date")
BAD_FEEDBACK: Final = _code("bad_feedback", "--feedback is not surfaced, oracle or both")
BAD_NOISE: Final = _code("bad_noise", "--noise is outside [0, 1)")
EVAL_NEEDS_CATALOG: Final = _code("eval_needs_catalog", "eval was run without --catalog")
EVAL_NEEDS_TRUST: Final = _code("eval_needs_trust", "eval --cards was run without --trust")
OUT_DIR_MISSING: Final = _code(
    "out_dir_missing", "--out names a file in a folder that does not exist"
)

# --- catalog snapshots and query files ------------------------------------------------
CATALOG_UNREADABLE: Final = _code("catalog_unreadable", "the catalog snapshot cannot be read")
CATALOG_TOO_LARGE: Final = _code("catalog_too_large", "the catalog snapshot is over its limit")
CATALOG_JSON: Final = _code("catalog_json", "the catalog snapshot is not valid JSON")
CATALOG_SHAPE: Final = _code("catalog_shape", "the catalog snapshot has the wrong shape")
QUERIES_UNREADABLE: Final = _code("queries_unreadable", "the queries file cannot be read")
BAD_QUERY_LINE: Final = _code(
    "bad_query_line", "a queries.jsonl line is not a query object with id, query and gold"
)
NO_QUERIES: Final = _code("no_queries", "the queries file holds no queries")

# --- cards: strict loading -----------------------------------------------------------
CARD_DUPLICATE_KEY: Final = _code("card_duplicate_key", "a card's JSON has a key twice")
CARD_NON_FINITE: Final = _code("card_non_finite", "a card holds NaN, Infinity or an overflow")
CARD_INTEGER_RANGE: Final = _code("card_integer_range", "a card holds an integer beyond ±(2^53−1)")
CARD_NON_STRING_KEY: Final = _code("card_non_string_key", "a card object has a non-string key")
CARD_BAD_STRING: Final = _code("card_bad_string", "a card string holds a lone surrogate")
CARD_BAD_TYPE: Final = _code("card_bad_type", "a card value is not a JSON type")
CARD_JSON: Final = _code("card_json", "a card file is not valid JSON")
CARD_ENCODING: Final = _code("card_encoding", "a card file is not UTF-8")
CARD_TOO_LARGE: Final = _code("card_too_large", "a card file is over 8 MiB")
CARD_TOO_DEEP: Final = _code("card_too_deep", "a card's JSON nests deeper than 64 levels")
CARD_FORMAT_VERSION: Final = _code(
    "card_format_version", "a card written in another card format; re-attest it"
)
CARD_SHAPE: Final = _code("card_shape", "a card's JSON does not have the card's shape")
CARD_NOT_CANONICAL: Final = _code(
    "card_not_canonical", "a card file's JSON is not exactly the model's rendering"
)
CARD_DUPLICATE_TOOL: Final = _code("card_duplicate_tool", "a card lists one tool twice")
CARD_MISSING: Final = _code("card_missing", "a server has no card; run bootstrap")

# --- cards: verification, manifest and the store ------------------------------------
CARD_SERVER_MISMATCH: Final = _code(
    "card_server_mismatch", "a card is for another server than the one it is loaded for"
)
BAD_ALGORITHM: Final = _code("bad_algorithm", "a card is signed with an algorithm not accepted")
CARD_NOT_INTACT: Final = _code("card_not_intact", "an in-memory card changed after verification")
EMPTY_TRUST_SET: Final = _code("empty_trust_set", "the trust set is empty, so nothing verifies")
KEY_OUT_OF_SCOPE: Final = _code(
    "key_out_of_scope", "the signing key is trusted, but not for this server"
)
VERSION_REUSED: Final = _code(
    "version_reused", "a card reuses an accepted version with different content"
)
MANIFEST_SHAPE: Final = _code("manifest_shape", "the card manifest has the wrong shape")
BAD_MANIFEST_SIGNATURE: Final = _code(
    "bad_manifest_signature", "the card manifest does not match its signature"
)
MANIFEST_ROLLBACK: Final = _code(
    "manifest_rollback", "the card manifest is older than one already accepted"
)
CARD_NOT_IN_MANIFEST: Final = _code(
    "card_not_in_manifest", "a card file is not the one the signed manifest names"
)
REPLY_TABLE_DAMAGED: Final = _code(
    "reply_table_damaged", "a reply table is not the one the signed manifest pins; not served"
)
NO_TRUST: Final = _code("no_trust", "the trust file holds no key")
NO_CARDS: Final = _code("no_cards", "no configured server has a signed card")
NO_VERIFIED_CARDS: Final = _code("no_verified_cards", "no card verified for these servers")

# --- cards: keys and the trust file --------------------------------------------------
KEY_MISSING: Final = _code("key_missing", "a key file does not exist")
KEY_IO: Final = _code("key_io", "a key file cannot be read")
KEY_MALFORMED: Final = _code("key_malformed", "a key file is not a key of the expected kind")
KEY_PERMISSIONS: Final = _code("key_permissions", "a private key is readable by group or world")
KEY_PRIVATE_MATERIAL: Final = _code(
    "key_private_material", "a public key file holds private key material"
)
KEY_EXISTS: Final = _code("key_exists", "keys init would overwrite a key without --force")
KEY_ID_MISMATCH: Final = _code(
    "key_id_mismatch", "a trust entry's key id does not match its public key"
)
TRUST_FILE: Final = _code("trust_file", "the trust file is too large or malformed")

# --- cards: generators, overrides and drift ------------------------------------------
GENERATOR_INCOMPLETE: Final = _code(
    "generator_incomplete", "a generator wrote no text for some tools"
)
LLM_UNREACHABLE: Final = _code("llm_unreachable", "the LLM endpoint cannot be reached")
LLM_AUTH: Final = _code("llm_auth", "the LLM endpoint refused the API key")
LLM_HTTP: Final = _code("llm_http", "the LLM endpoint answered with an HTTP error")
LLM_BUSY: Final = _code("llm_busy", "the LLM endpoint stayed busy (429/5xx) through retries")
LLM_BAD_REPLY: Final = _code("llm_bad_reply", "the LLM's reply does not match the card schema")
OVERRIDES_TOO_LARGE: Final = _code("overrides_too_large", "the overrides file is too large")
OVERRIDES_INVALID: Final = _code(
    "overrides_invalid", "the overrides file is not valid TOML or has the wrong shape"
)
OVERRIDE_UNKNOWN_TOOL: Final = _code(
    "override_unknown_tool", "an override names a tool the server does not serve"
)
OVERRIDE_BAD_EXAMPLE: Final = _code(
    "override_bad_example", "an override's example does not match the input schema"
)
TRANSFORM_UNKNOWN_ARGUMENT: Final = _code("transform_unknown_argument", "no such upstream argument")
TRANSFORM_NEEDS_VALUE: Final = _code("transform_needs_value", "a hidden required arg has no value")
TRANSFORM_NAME_COLLISION: Final = _code("transform_name_collision", "a served name is taken")
TRANSFORM_BAD_NARROWING: Final = _code("transform_bad_narrowing", "allows a value upstream refuses")
TOOL_DRIFTED: Final = _code("tool_drifted", "the tool's definition changed since attestation")
TOOL_UNATTESTED: Final = _code("tool_unattested", "the tool is served but no signed card covers it")
TOOL_MISSING: Final = _code("tool_missing", "the tool is in its card but no longer served")

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

# --- stubs --------------------------------------------------------------------------
STUBS_TARGET: Final = _code("stubs_target", "the stubs' serve target is empty or ambiguous")
STUBS_BAD_PACKAGE: Final = _code("stubs_bad_package", "--package is not an importable name")
STUBS_UNKNOWN_SERVER: Final = _code(
    "stubs_unknown_server", "--server names a server without a verified card"
)
STUBS_NOT_OURS: Final = _code(
    "stubs_not_ours", "the output folder exists and was not written by stubs"
)
STUBS_NO_VERIFIED_CARDS: Final = _code(
    "stubs_no_verified_cards", "stubs found no verified card to generate from"
)
SERVE_UNAVAILABLE: Final = _code("serve_unavailable", "a stub cannot reach `cartograph serve`")
SERVE_TIMEOUT: Final = _code("serve_timeout", "a stub's `cartograph serve` did not connect in time")
MISSING_STRUCTURED_CONTENT: Final = _code(
    "missing_structured_content", "a tool with an output schema returned no structured content"
)
BAD_STRUCTURED_CONTENT: Final = _code(
    "bad_structured_content", "a tool's structured content breaks its attested output schema"
)

# --- rift ---------------------------------------------------------------------------
RIFT_BAD_BASELINE: Final = _code("rift_bad_baseline", "a Rift baseline file is malformed")
RIFT_NO_VERIFIED_CARDS: Final = _code(
    "rift_no_verified_cards", "rift found no verified card to analyse"
)
RIFT_NEEDS_SCIPY: Final = _code(
    "rift_needs_scipy", "the Jaccard baseline over many tools needs scipy (cartograph[rift])"
)
RIFT_REGENERATE_NEEDS_CARDS: Final = _code(
    "rift_regenerate_needs_cards", "--regenerate needs signed cards for every server"
)
RIFT_REGENERATE_UNKNOWN_SERVER: Final = _code(
    "rift_regenerate_unknown_server", "--regenerate names a server not in the federation"
)

# --- the demo ---------------------------------------------------------------------
DEMO_RECIPE_MISSING: Final = _code(
    "demo_recipe_missing", "this install carries no demo federation recipe"
)
DEMO_NOT_INSTALLED: Final = _code(
    "demo_not_installed", "no demo federation is installed; run demo --setup"
)
DEMO_NEEDS_NODE: Final = _code(
    "demo_needs_node", "the demo's npm servers need Node.js 20+ with npm on PATH"
)
DEMO_SETUP_FAILED: Final = _code(
    "demo_setup_failed", "installing the demo federation failed (the message has the tail)"
)

# --- the learning usage log ------------------------------------------------------------
USAGE_LOG_UNREADABLE: Final = _code("usage_log_unreadable", "the usage log cannot be opened")
USAGE_LOG_CORRUPT: Final = _code("usage_log_corrupt", "the usage log is not a sound SQLite file")
USAGE_LOG_NEWER: Final = _code("usage_log_newer", "the usage log's schema is newer than this build")
USAGE_LOG_IO: Final = _code("usage_log_io", "reading or writing the usage log failed")

# --- shared storage ([storage] url) and the fleet's admin surface ---------------------------
STORAGE: Final = _code("storage", "the shared database cannot be used")
AUDIT_UNAVAILABLE: Final = _code(
    "audit_unavailable", "an audit record can be neither stored nor spooled: calls fail closed"
)
STORAGE_URL: Final = _code("storage_url", "[storage] url does not name PostgreSQL")
STORAGE_PASSWORD_IN_URL: Final = _code(
    "storage_password_in_url", "[storage] url holds a password; use the password variable"
)
STORAGE_UNREACHABLE: Final = _code(
    "storage_unreachable", "the database could not be reached (or refused the login) at start"
)
STORAGE_DRIVER_MISSING: Final = _code(
    "storage_driver_missing", "the PostgreSQL driver is not installed: cartograph[postgres]"
)
STORAGE_SCHEMA_NEWER: Final = _code(
    "storage_schema_newer", "the database was migrated by a newer Cartograph"
)
ADMIN_REQUIRED: Final = _code(
    "admin_required", "POST /admin/reload needs a token whose entry has admin = true"
)

# --- traces and structured logs ([telemetry], [logging]; docs/fleet.md) -------------------
OTEL_NOT_INSTALLED: Final = _code(
    "otel_not_installed", "traces are asked for but cartograph[otel] is not installed"
)
TELEMETRY_ENDPOINT: Final = _code(
    "telemetry_endpoint", "the OTLP endpoint (file or OTEL_* variable) is not an http(s) URL"
)

# --- code mode: the run tool and `cartograph run` ([code_mode]; docs/code-mode.md) -------
CODE_ERROR: Final = _code(
    "code_error", "a code-mode program raised an exception (type, message, line and column shown)"
)
CODE_SYNTAX: Final = _code("code_syntax", "a code-mode program is not valid Python")
CODE_UNSUPPORTED: Final = _code(
    "code_unsupported",
    "a code-mode program uses Python the sandbox lacks (class inheritance, yield)",
)
CODE_FORBIDDEN: Final = _code(
    "code_forbidden",
    "a code-mode program reached for the host: files, environment, imports, dunders",
)
CODE_TIMEOUT: Final = _code(
    "code_timeout", "a code-mode run took longer than [code_mode] wall_time"
)
CODE_MEMORY_LIMIT: Final = _code(
    "code_memory_limit", "a code-mode program allocated more than [code_mode] max_memory"
)
CODE_RECURSION_LIMIT: Final = _code(
    "code_recursion_limit",
    "a code-mode program recursed deeper than [code_mode] max_recursion_depth",
)
CODE_CALL_LIMIT: Final = _code(
    "code_call_limit", "a code-mode run made more inner calls than [code_mode] max_calls"
)
CODE_OUTPUT_TOO_LARGE: Final = _code(
    "code_output_too_large", "a code-mode run's value is over [code_mode] max_output_bytes"
)
CODE_TOO_LONG: Final = _code(
    "code_too_long", "a code-mode program is longer than [code_mode] max_code_chars"
)
CODE_BAD_INPUTS: Final = _code(
    "code_bad_inputs", "run's code is not a non-empty string, or its inputs not a JSON object"
)
CODE_WRITE_DENIED: Final = _code(
    "code_write_denied",
    "code called a tool not marked read-only and not in [code_mode] allow_writes",
)
CODE_CRASHED: Final = _code(
    "code_crashed", "the sandbox worker died mid-run; it is replaced and the next run works"
)
CODE_BUSY: Final = _code("code_busy", "no sandbox worker came free within the run's wall time")
CODE_MODE_NOT_INSTALLED: Final = _code(
    "code_mode_not_installed", "code mode is asked for but cartograph[code] is not installed"
)

REGISTRY: Final[Mapping[str, str]] = MappingProxyType(_MEANINGS)
"""Every code, mapped to its one-line meaning."""
