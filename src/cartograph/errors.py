"""Cartograph's exception hierarchy.

Every error Cartograph raises on purpose derives from :class:`CartographError`
and carries a stable ``code`` (tests assert codes, never message text) and a
message that tells the operator what to do next. Library code raises; the CLI
maps errors to exit codes; the MCP surface maps them to tool errors.
Every code is a named constant in :mod:`cartograph.error_codes` (one registry, each
code with its meaning, documented in ``docs/errors.md``); each class's docstring says
when it is raised and what the user does about it.

    CartographError
    ├── ConfigError                 bad config file, mcpServers import, catalog snapshot
    │   └── OptionError             a command-line option value out of range or inconsistent
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
    ├── CodeError                   a code-mode run failed: the program, a limit, the write gate
    ├── UsageLogError               the learning usage log cannot be opened, migrated or written
    ├── StateFileError              a state-directory file over its size limit, or not safe to read
    └── StorageError                the shared database ([storage] url) cannot be used
        └── AuditUnavailable        an audit record can be neither stored nor spooled: fail closed
"""

from __future__ import annotations

from typing import Any

from cartograph import error_codes as codes


class CartographError(Exception):
    """Root of every error Cartograph raises deliberately.

    Raised directly only for conditions no subclass names (``index_not_ready``,
    ``starting``, ``internal_error``). Catch it to handle any Cartograph error; read
    ``code`` (stable, listed in :mod:`cartograph.error_codes`) rather than the message,
    and show ``message`` to the user: it names the fix.
    """

    code: str = codes.CARTOGRAPH_ERROR

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
    """The configuration cannot be used: the config file, an imported ``mcpServers`` file,
    a command-line option or an HTTP serving setting.

    Raised by the loader (naming file, server and key), by ``serve`` before it binds,
    and by commands for bad option values. The user edits the named file or key, or
    changes the option, and runs the command again.
    """

    code = codes.CONFIG_ERROR


class OptionError(ConfigError):
    """A command-line option's value is out of range or contradicts another option.

    Raised by CLI commands (and the settings they build) after Click has parsed the
    options; the CLI exits 2, like Click's own usage errors. The user changes the option
    the one-line message names (``cartograph COMMAND --help`` lists the valid values).
    """

    code = codes.BAD_OPTION


class CatalogError(CartographError):
    """A catalog snapshot (``catalog.json``) or a queries file (``queries.jsonl``) is unusable.

    Raised when reading ``--catalog`` / ``--queries`` input: unreadable, too large,
    not JSON or the wrong shape. The user regenerates the file (``cartograph snapshot``)
    or fixes the line the message names.
    """

    code = codes.CATALOG_ERROR


class CardError(CartographError):
    """Something is wrong with a capability card or the card store.

    Raised directly for store-level problems (no card, no trust, no verified card);
    its subclasses say which check a card failed. The usual fix is
    ``cartograph bootstrap`` (re-attest), after reading why with ``cartograph cards verify``.
    """

    code = codes.CARD_ERROR


class CardFormatError(CardError):
    """A card (or the card manifest) cannot be loaded as a card at all.

    Raised by the strict loader before any signature check: duplicate JSON keys, NaN,
    integers beyond ±(2^53−1), bad strings, over-size or over-deep files, another card
    format, a shape the model rejects. Two parsers could read such bytes differently, so
    the card is refused; the user re-attests it with ``cartograph bootstrap``.
    """

    code = codes.CARD_FORMAT


class SignatureError(CardError):
    """A card's signature does not verify: it was tampered with, or parts of two cards were mixed.

    Raised at verification, before the card can reach the index, ``discover`` or
    ``call``. The user finds out who changed the card file, then re-attests with
    ``cartograph bootstrap --server NAME``.
    """

    code = codes.BAD_SIGNATURE


class UnknownKeyError(CardError):
    """A card is signed by a key the trust set does not hold, or holds for other servers only.

    Raised at verification; an empty trust set verifies nothing. The user adds the
    signer's public key to the trust file (``cartograph keys init`` for the operator's own
    key), or extends that key's server scope.
    """

    code = codes.UNKNOWN_KEY


class RevokedKeyError(CardError):
    """A card is signed by a key the trust file lists as revoked.

    Raised at verification. The user re-attests the server with a current key
    (``cartograph bootstrap --server NAME``).
    """

    code = codes.REVOKED_KEY


class RollbackError(CardError):
    """A card or manifest is older than (or reuses the version of) one already accepted.

    Raised at verification against the accepted-versions record, so an attacker cannot
    replay an older signed card. The user restores the newer card or re-attests.
    """

    code = codes.ROLLBACK


class KeyFileError(CardError):
    """A signing key or the trust file is missing, unreadable, malformed or too permissive.

    Raised when loading keys for signing or the trust set for verification. The message
    names the file and the fix (``cartograph keys init``, ``chmod 600``, removing the entry).
    """

    code = codes.KEY_FILE


class GeneratorError(CardError):
    """A card generator failed: the LLM endpoint is down, refuses the key or answers junk,
    or an override does not fit the server.

    Raised during ``cartograph bootstrap``; no card is written. The user fixes the
    endpoint or the overrides file, or uses ``--generator template``.
    """

    code = codes.GENERATOR_ERROR


class DriftError(CardError):
    """An upstream tool no longer matches the pin in its signed card (a rug pull, or an update).

    Raised for a ``call`` to a drifted, unattested or missing tool; the tool is also
    hidden from ``discover``. The user reviews the change (``cartograph cards diff``) and
    re-attests with ``cartograph bootstrap --server NAME``.
    """

    code = codes.DRIFT


class NameCollisionError(CartographError):
    """Two servers or tools have the same name after normalisation, or a name is reserved.

    Raised when loading the config or connecting the federation, since agents could not
    tell the two apart. The user renames one of them.
    """

    code = codes.NAME_COLLISION


class RetrievalError(CartographError):
    """An embedder, index, ranker or query adapter cannot be used.

    Raised when building or querying the tool index. The message names the choice or
    file at fault and the valid alternatives.
    """

    code = codes.RETRIEVAL_ERROR


class PersistedIndexError(RetrievalError):
    """The persisted serving corpus was changed, truncated or removed; it is rebuilt.

    Raised when a snapshot's recorded hashes do not match its files; the index logs it,
    discards the snapshot and builds afresh, so the user need do nothing (if it repeats,
    something else is writing into the state directory).
    """

    code = codes.PERSISTED_INDEX_DAMAGED


class UpstreamError(CartographError):
    """Talking to an upstream MCP server failed.

    Raised by the upstream layer and the gateway; its subclasses say how. Counted by the
    upstream's circuit breaker. The message names the server, the phase and, for stdio
    servers, the tail of its stderr.
    """

    code = codes.UPSTREAM_ERROR


class UpstreamUnavailable(UpstreamError):
    """An upstream could not be started or reached, or closed its connection.

    Raised on connect or call. The user checks the server's command or URL (the message
    carries its stderr tail) or that the server is running.
    """

    code = codes.UPSTREAM_UNAVAILABLE


class OAuthLoginRequired(UpstreamUnavailable):
    """No usable OAuth token and no person to ask: run `cartograph auth login SERVER`.

    Raised when connecting an ``auth = "oauth"`` server whose stored token is missing,
    expired past refresh or refused; ``serve`` never opens a browser. The user runs
    ``cartograph auth login SERVER`` once, then restarts or reconnects.
    """

    code = codes.OAUTH_LOGIN_REQUIRED


class UpstreamTimeout(UpstreamError):
    """An upstream did not answer within its ``connect_timeout`` / ``call_timeout``.

    Raised on connect or call; the call may still run upstream. The user retries, or
    raises the server's timeout in the config.
    """

    code = codes.UPSTREAM_TIMEOUT


class UpstreamProtocolError(UpstreamError):
    """An upstream sent a malformed or unexpected message, or a JSON-RPC error.

    Raised on connect or call. The upstream server is at fault; the user reports it to
    that server's authors or pins an older version.
    """

    code = codes.UPSTREAM_PROTOCOL


class CircuitOpen(UpstreamError):
    """The upstream's circuit breaker is open after repeated failures; Cartograph fails fast.

    Raised for calls while the breaker is open; ``details`` carry the retry-after time.
    The user waits that long, or fixes the upstream the earlier errors named.
    """

    code = codes.CIRCUIT_OPEN


class Overloaded(UpstreamError):
    """The upstream's in-flight limit and its queue are both full.

    Raised for a call beyond ``gateway.max_in_flight`` plus its queue; nothing was sent. The caller
    retries later, or the operator raises the server's limits.
    """

    code = codes.OVERLOADED


class UpstreamRefused(UpstreamError):
    """The upstream is healthy and said no (unknown resource or prompt, bad arguments).

    Raised when a passed-through ``resources/read`` or ``prompts/get`` gets a JSON-RPC
    error from the upstream; carries the upstream's ``rpc_code`` and never counts against
    the breaker. The client fixes the URI, prompt name or arguments the message names.
    """

    code = codes.UPSTREAM_REFUSED


class ResultTooLarge(UpstreamError):
    """A resource read or prompt over ``[gateway] max_result_bytes``: refused, never cut.

    A tool result is truncated with a marker; a resource's bytes (a blob, a
    document) are useless cut, so the read is refused naming the limit. Raised by the
    passthrough of ``resources/read`` and ``prompts/get``; the operator raises the limit
    or the client reads a smaller resource.
    """

    code = codes.RESULT_TOO_LARGE


class CallError(CartographError):
    """A ``call`` the proxy refuses before any upstream I/O.

    Raised by the gateway and returned to the agent as an ``isError`` result with its
    code. The agent corrects the call as the message shows.
    """

    code = codes.CALL_ERROR


class UnknownToolError(CallError):
    """No such server or tool in the verified catalog (or no such proxy tool).

    Raised for a ``call`` naming something the catalog does not hold. The agent runs
    ``discover`` and calls a tool it lists.
    """

    code = codes.UNKNOWN_TOOL


class ArgumentError(CallError):
    """A call's arguments do not match the tool's input schema, or the call itself is malformed.

    Raised before any upstream I/O; the message shows the schema or the corrective
    example. The agent fixes the arguments and calls again.
    """

    code = codes.BAD_ARGUMENTS


class PolicyError(CartographError):
    """A catalog policy or the authorization refuses the request.

    Raised for tools a catalog denies or does not expose, and catalogs a principal may
    not reach. The operator changes the catalog's policy or the token's ``catalogs``.
    """

    code = codes.POLICY_DENIED


class AuthenticationError(PolicyError):
    """No valid bearer token where one is required (HTTP 401).

    Raised by the HTTP server's token check. The client sends
    ``Authorization: Bearer <token>`` with a token from ``[[http.tokens]]``.
    """

    code = codes.UNAUTHENTICATED


class ModelIntegrityError(RetrievalError):
    """A shipped model file is missing or fails its sha256 pin.

    Raised when loading an embedder, so a swapped model never ranks tools. The user
    reinstalls Cartograph (or restores the file ``details["file"]`` names).
    """

    code = codes.MODEL_INTEGRITY


class ToolFailed(UpstreamError):
    """The tool ran and reported an error (``isError``), as seen by a generated stub.

    Raised by stubs only; the proxy itself returns such results unchanged. The caller
    reads the message (the tool's own text) and fixes the arguments or the request.
    """

    code = codes.TOOL_FAILED


class SessionLimitError(CartographError):
    """A cap on downstream or upstream sessions is reached; nothing was opened.

    Raised when a new MCP session (HTTP 429) or a per-client upstream session would
    exceed a ``[gateway]`` cap. Not an :class:`UpstreamError`: the upstream did nothing
    wrong, so it must not count against its circuit breaker. The client ends idle
    sessions (they expire after ``session_idle_timeout``), or the operator raises the
    ``[gateway]`` cap the message names.
    """

    code = codes.SESSION_LIMIT


class StubError(CartographError):
    """``cartograph stubs`` refuses to generate: bad package name, unknown server, no verified
    cards, or an output folder it did not write.

    Raised before anything is written. The user changes ``--out``, ``--package`` or
    ``--server``, or attests the servers first.
    """

    code = codes.STUB_ERROR


class DemoError(CartographError):
    """A ``cartograph demo`` check failed; the message is what an agent would have seen.

    Raised by the demo runner. The user runs ``scripts/setup`` (the demo's servers) and
    reads the failing step.
    """

    code = codes.DEMO_FAILED


class CodeError(CartographError):
    """A code-mode run (the ``run`` tool, ``cartograph run``) did not finish with a value.

    Raised by :mod:`cartograph.codemode` when the program does not parse or raises, when
    it reaches for what the sandbox does not offer (``code_forbidden``), when a limit of
    ``[code_mode]`` ends it (``code_timeout``, ``code_memory_limit``, ``code_call_limit``,
    …), when it calls a tool the write gate refuses, or when its worker died
    (``code_crashed``). ``details`` carry the program's ``line`` and ``column`` when the
    sandbox knew them. The agent fixes its program (the message names what to change) or
    the operator raises the limit in ``[code_mode]``.
    """

    code = codes.CODE_ERROR


class UsageLogError(CartographError):
    """The learning usage log cannot be opened, migrated or written.

    Raised by the learning store; serving goes on without learning. The user moves the
    file aside (Cartograph starts a new one) or fixes the state directory's permissions.
    """

    code = codes.USAGE_LOG


class StateFileError(CartographError):
    """A file the state directory feeds the serving path is not read (P-REL-13).

    Raised by :func:`cartograph.fsutil.read_bounded` for a file over its size limit
    (``state_file_too_large``), a device, FIFO or folder in a file's place, or a
    symlink out of the state directory (``state_file_unsafe``). The reader treats
    the file as damaged (a reply table or index is rebuilt or bypassed, a card is
    not served) and logs the code; the operator removes or replaces the file.
    """

    code = codes.STATE_FILE_UNSAFE


class StorageError(CartographError):
    """The shared database of ``[storage] url`` cannot be used.

    Raised at start when the URL is wrong, the driver is missing, the database is
    unreachable or its schema is newer; the user fixes the URL, the server or
    ``$CARTOGRAPH_DB_PASSWORD`` (``docs/fleet.md``).
    """

    code = codes.STORAGE


class AuditUnavailable(StorageError):
    """An audit record can be neither committed to the database nor spooled locally.

    Raised while the database is down and the replica's spool is full: calls are
    refused before any upstream I/O (fail closed) until the database is back.
    """

    code = codes.AUDIT_UNAVAILABLE


__all__ = [
    "ArgumentError",
    "AuditUnavailable",
    "AuthenticationError",
    "CallError",
    "CardError",
    "CardFormatError",
    "CartographError",
    "CatalogError",
    "CircuitOpen",
    "CodeError",
    "ConfigError",
    "DemoError",
    "DriftError",
    "GeneratorError",
    "KeyFileError",
    "ModelIntegrityError",
    "NameCollisionError",
    "OptionError",
    "Overloaded",
    "PersistedIndexError",
    "PolicyError",
    "RetrievalError",
    "RevokedKeyError",
    "RollbackError",
    "SessionLimitError",
    "SignatureError",
    "StateFileError",
    "StorageError",
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
