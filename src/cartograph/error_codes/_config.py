"""Codes of config files and of configuration given on the command line.

docs/errors.md, "Config files and command-line configuration".
"""

from __future__ import annotations

from typing import Final

from cartograph.error_codes._registry import _code

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
