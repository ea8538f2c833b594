"""Codes of what is built around serving: stubs, Rift, the demo, learning, shared
storage and the fleet's admin surface, traces and logs.

docs/errors.md, the sections from "Stubs" on; shared storage in docs/fleet.md.
"""

from __future__ import annotations

from typing import Final

from cartograph.error_codes._registry import _code

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
