"""Codes of what is loaded about tools: catalog snapshots, query files and cards.

Cards: strict loading; verification, the manifest and the store; keys and the
trust file; generators, overrides and drift. docs/errors.md, the sections from
"Catalog snapshots and query files" to "Cards: generators, overrides and drift".
"""

from __future__ import annotations

from typing import Final

from cartograph.error_codes._registry import _code

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
