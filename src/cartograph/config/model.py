"""Typed configuration: small value objects with named, safe defaults.

The file format is TOML (``cartograph.toml``); see ``docs/config.md``. Every
section is optional except the servers a federation needs. Relative paths are
resolved against the config file's folder by the loader, never here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cartograph import error_codes as codes
from cartograph.config.catalog_rules import (
    MountMode,
    check_catalog_names,
    check_explicit_prefix,
    check_members,
)
from cartograph.config.oauth import (
    OAuthConfig,
    check_oauth,
    refuse_inline_secret,
)
from cartograph.config.secret_policy import SecretPolicy
from cartograph.config.secrets import (
    header_secrets,
    masked_env,
    masked_headers,
    masked_url,
    secret_env_values,
)
from cartograph.config.transforms import ToolTransform
from cartograph.errors import ConfigError
from cartograph.names import PROXY_TOOL_NAMES, NamedThing, check_names, normalise_name

DEFAULT_CONNECT_TIMEOUT: Final = 30.0
DEFAULT_CALL_TIMEOUT: Final = 60.0
DEFAULT_STATE_DIR: Final = ".cartograph"
DEFAULT_HTTP_HOST: Final = "127.0.0.1"
DEFAULT_HTTP_PORT: Final = 8765
DEFAULT_MAX_BODY_BYTES: Final = 4 * 1024 * 1024
DEFAULT_MAX_IN_FLIGHT: Final = 8
DEFAULT_QUEUE_SIZE: Final = 32
DEFAULT_BREAKER_FAILURES: Final = 5
DEFAULT_BREAKER_COOLDOWN: Final = 30.0
DEFAULT_MAX_RESULT_BYTES: Final = 1024 * 1024
# discover's task: enough for a paragraph of multi-step task, far below what stalls ranking.
DEFAULT_MAX_TASK_CHARS: Final = 4000
# Concurrent CPU jobs (query embedding, ranking, index builds) off the event loop.
DEFAULT_CPU_WORKERS: Final = 2
# After SIGTERM, how long `serve --http` lets in-flight calls finish before ending them.
DEFAULT_SHUTDOWN_GRACE: Final = 10.0
DEFAULT_RELIST_INTERVAL: Final = 30.0
"""Seconds between re-lists of every live upstream session (catches unannounced rug pulls)."""
DEFAULT_SESSION_IDLE_TIMEOUT: Final = 300.0
"""Seconds an unused downstream MCP session, or per-client upstream session, is kept."""
DEFAULT_MAX_SESSIONS: Final = 256
DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: Final = 32
DEFAULT_MAX_UPSTREAM_SESSIONS: Final = 64
DEFAULT_MAX_UPSTREAM_SESSIONS_PER_PRINCIPAL: Final = 16
DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION: Final = 100
"""Resource subscriptions one downstream session may hold in one catalog."""
MAX_SECONDS: Final = 7 * 24 * 3600.0

Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]
"""A duration: positive, finite and at most a week. ``inf`` would disable a deadline
(P-REL-1) and ``nan`` compares false with everything, so both are refused at load."""

Transport = Literal["stdio", "streamable-http", "sse"]
# How to negotiate the protocol era: "auto" probes 2026-07-28 and falls back to the
# 2025 initialize handshake; "legacy" forces the handshake; a version string pins it.
Protocol = Literal["auto", "legacy", "2026-07-28"]
Passthrough = Literal["resources", "prompts", "sampling", "elicitation"]  # sampling etc.: opt-in


SERVER_NAME_PATTERN: Final = re.compile(r"^\w[\w .-]{0,63}$")
"""A server name: 1-64 letters, digits, space, ``_``, ``-`` or ``.``, not starting with a
separator (it becomes part of tool addresses and file names)."""
_HTTP_TRANSPORTS: Final = frozenset(get_args(Transport)) - {"stdio"}


class _Section(BaseModel):
    # Never echo an input in a validation error: it may be a token or a header value.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


def infer_transport(command: object, url: object) -> Transport:
    """The transport a server means when it names none: a url alone is HTTP (SSE when the
    path ends in ``/sse``); anything else is stdio."""
    if command is None and isinstance(url, str):
        return "sse" if url.rstrip("/").endswith("/sse") else "streamable-http"
    return "stdio"


class ServerConfig(_Section):
    """One upstream MCP server.

    Exactly one of ``command`` (stdio) or ``url`` (streamable HTTP / SSE) is set.
    ``stateless`` declares that one upstream session may be shared across
    downstream clients (P-POOL-1); the safe default is not to share.
    """

    name: str
    transport: Transport = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    # env names whose values are secret although the name does not say so (see config/secrets.py)
    secret_env: tuple[str, ...] = ()
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    connect_timeout: Seconds = DEFAULT_CONNECT_TIMEOUT
    call_timeout: Seconds = DEFAULT_CALL_TIMEOUT
    stateless: bool = False
    publisher: str | None = None
    protocol: Protocol = "auto"
    disabled_tools: tuple[str, ...] = ()
    """Tools never served nor callable (a client file's ``disabledTools``): deny rules."""
    auth: Literal["oauth"] | None = None
    """``"oauth"``: an HTTP upstream that needs OAuth 2.1 (`cartograph auth login NAME` once)."""
    oauth: OAuthConfig = Field(default_factory=OAuthConfig)
    tools: dict[str, ToolTransform] = Field(default_factory=dict)
    """Served names and shapes of its tools, signed into its card (config/transforms.py)."""

    @model_validator(mode="before")
    @classmethod
    def _transport_from_endpoint(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            refuse_inline_secret(data.get("name"), data)
        if isinstance(data, Mapping) and data.get("transport") is None:
            return {**data, "transport": infer_transport(data.get("command"), data.get("url"))}
        return data

    @model_validator(mode="after")
    def _is_a_usable_server(self) -> ServerConfig:
        """The invariants every server holds however it was built (file, import or code)."""
        check_server_name(self.name)
        self._check_endpoint()
        check_oauth(self.name, self.oauth)
        return self

    def _check_endpoint(self) -> None:
        where = f"server {self.name!r}"
        if self.command is not None and self.url is not None:
            raise ConfigError(
                f"{where}: keys 'command' and 'url': set one (stdio) or the other (HTTP/SSE)",
                code=codes.CONFIG_CONFLICTING_TRANSPORT,
                server=self.name,
            )
        if self.transport == "stdio" and (self.command is None or not self.command.strip()):
            raise ConfigError(
                f"{where}: key 'command': a stdio server needs a command to run",
                code=codes.CONFIG_MISSING_COMMAND,
                server=self.name,
                key="command",
            )
        if self.auth == "oauth" and self.transport not in _HTTP_TRANSPORTS:
            raise ConfigError(
                f"{where}: key 'auth': OAuth is for HTTP servers (url = ...); a stdio "
                "server takes its credentials from env",
                code=codes.OAUTH_NEEDS_HTTP,
                server=self.name,
                key="auth",
            )
        if self.transport in _HTTP_TRANSPORTS:
            problem = url_problem(self.url)
            if problem is not None:
                raise ConfigError(
                    f"{where}: key 'url': {problem}",
                    code=codes.CONFIG_BAD_URL,
                    server=self.name,
                    key="url",
                )

    def secret_values(self) -> list[str]:
        """Everything secret in this server's config, for redactors (config/secrets.py)."""
        return [
            *secret_env_values(self.env, self.secret_env),
            *header_secrets(self.headers),
            *self.oauth.secret_values(self.name),
        ]

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """The fields, with secret env values, every header value and URL passwords masked."""
        for name, value in super().__repr_args__():
            if name == "env":
                yield name, masked_env(self.env, self.secret_env)
            elif name == "headers":
                yield name, masked_headers(self.headers)
            elif name == "url" and value is not None:
                yield name, masked_url(value)
            else:
                yield name, value


def check_server_name(name: str) -> None:
    """Refuse a name outside :data:`SERVER_NAME_PATTERN` or one that reads as a proxy tool."""
    if not SERVER_NAME_PATTERN.match(name):
        raise ConfigError(
            f"server {name!r}: a server name is 1-64 letters, digits, space, '_', '-' or '.'",
            code=codes.CONFIG_BAD_NAME,
            server=name,
        )
    if normalise_name(name) in {normalise_name(w) for w in PROXY_TOOL_NAMES}:
        raise ConfigError(
            f"server {name!r}: the name collides with Cartograph's proxy tool {name!r} "
            f"({', '.join(sorted(PROXY_TOOL_NAMES))} are reserved); rename it",
            code=codes.CONFIG_RESERVED_NAME,
            server=name,
        )


def url_problem(url: object) -> str | None:
    """Why ``url`` cannot address an HTTP/SSE server, or ``None`` when it can."""
    import httpx2  # here, not at the top: building config models needs no HTTP client

    if not isinstance(url, str) or not url:
        return "an HTTP or SSE server needs a url"
    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError, TypeError):
        return "is not a valid URL"
    if parsed.scheme not in {"http", "https"} or not parsed.host:
        return "must be an absolute http:// or https:// URL"
    return None


class LLMGeneratorConfig(_Section):
    """An OpenAI-compatible chat-completions endpoint for card generation."""

    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = Field(default=4, ge=1, le=64)
    timeout: Seconds = 60.0
    max_retries: int = Field(default=3, ge=0, le=10)


class CardsConfig(_Section):
    generator: Literal["template", "llm"] = "template"
    llm: LLMGeneratorConfig = Field(default_factory=LLMGeneratorConfig)
    overrides: Path | None = None
    key: Path | None = None
    trust: Path | None = None


class IndexConfig(_Section):
    embedder: Literal["minilm", "fake"] = "minilm"
    ranker: Literal["hybrid", "two-stage", "dense", "bm25", "jaccard", "random"] = "hybrid"
    default_k: int = Field(default=5, ge=1, le=50)
    # One model run per query, step vectors pooled from it (the default since the
    # protocol found no set worse; docs/retrieval.md). false: one run per step.
    pooled_steps: bool = True
    # A longer discover task is refused with `task_too_long` before any ranking (P-REL-10).
    max_task_chars: int = Field(default=DEFAULT_MAX_TASK_CHARS, ge=1)
    # How many CPU-bound jobs run at once in worker threads, for the whole process.
    cpu_workers: int = Field(default=DEFAULT_CPU_WORKERS, ge=1, le=64)


DEFAULT_MAX_CALLS_PER_TASK: Final = 64
"""Call rows one logged task may hold: a session looping on one discover cannot fill the log."""


class LearningConfig(_Section):
    """Learning from use (``cartograph.learning``): a usage log that re-ranks ``discover``.

    Off by default (``enabled = true`` turns it on): measured on sets nobody tuned
    on, its votes and learned text moved tasks it had never seen (BFCL evaluation
    half, prequential, surfaced feedback: Hit@1 0.670 -> 0.437), so it ships off
    until it leaves new tasks as zero-shot ranks them (docs/retrieval.md). When on,
    it only ever re-orders verified, servable tools, keeps the zero-shot ranker's
    best ``zero_shot_slots`` in every result, counts only successful calls, drops a
    tool's evidence when its card changes and never reads across catalogs;
    ``enabled = false`` neither logs nor re-ranks. Evidence belongs to the principal
    that logged it: another principal's ranking moves only where ``min_principals``
    distinct principals agree, each principal logs at most ``max_evidence_per_minute``
    rows, and a zero-shot first tool leading by ``first_place_margin`` stays first.
    """

    enabled: bool = False
    # Per catalog: one catalog's traffic never evicts another's evidence.
    max_tasks: int = Field(default=10_000, ge=1)
    # Later calls of a task past the cap are neither logged nor counted as evidence.
    max_calls_per_task: int = Field(default=DEFAULT_MAX_CALLS_PER_TASK, ge=1)
    max_age_days: float = Field(default=90.0, gt=0)
    attribution_window: float = Field(default=600.0, gt=0)
    neighbours: int = Field(default=10, ge=1, le=100)
    # A near-repeat: only logged tasks at least this similar vote (cosine). Fitted on the
    # training data alone (MetaTool and the BFCL training half, benchmarks/tune_learning.py):
    # the most that leaves new tasks' Hit@1 within 0.5 % of zero-shot on both.
    min_similarity: float = Field(default=0.8, ge=-1.0, le=1.0)
    vote_weight: float = Field(default=1.0, ge=0.0)
    text_weight: float = Field(default=0.6, ge=0.0)
    zero_shot_slots: int = Field(default=2, ge=2)
    # Distinct principals that must agree before evidence moves another's ranking (1: any).
    min_principals: int = Field(default=2, ge=1)
    # Rows past it (discovers and calls, per principal, per catalog, per process) are not logged.
    max_evidence_per_minute: int = Field(default=30, ge=1)
    # (best - second) / best at or above it: nothing learned takes first place from the best.
    first_place_margin: float = Field(default=0.1, ge=0.0, le=1.0)


class GatewayConfig(_Section):
    mode: Literal["pooled", "oneshot"] = "pooled"
    max_in_flight: int = Field(default=DEFAULT_MAX_IN_FLIGHT, ge=1)
    queue_size: int = Field(default=DEFAULT_QUEUE_SIZE, ge=0)
    breaker_failures: int = Field(default=DEFAULT_BREAKER_FAILURES, ge=1)
    breaker_cooldown: Seconds = DEFAULT_BREAKER_COOLDOWN
    max_result_bytes: int = Field(default=DEFAULT_MAX_RESULT_BYTES, ge=1024)
    audit_log: Path | None = None
    relist_interval: Seconds = DEFAULT_RELIST_INTERVAL
    session_idle_timeout: Seconds = DEFAULT_SESSION_IDLE_TIMEOUT
    max_sessions: int = Field(default=DEFAULT_MAX_SESSIONS, ge=1)
    """Downstream (HTTP) MCP sessions open at once, in total."""
    max_sessions_per_principal: int = Field(default=DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, ge=1)
    max_upstream_sessions: int = Field(default=DEFAULT_MAX_UPSTREAM_SESSIONS, ge=1)
    """Per-client upstream sessions (for stdio: child processes) open at once, in total."""
    max_upstream_sessions_per_principal: int = Field(
        default=DEFAULT_MAX_UPSTREAM_SESSIONS_PER_PRINCIPAL, ge=1
    )
    max_subscriptions_per_session: int = Field(default=DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION, ge=1)
    """``resources/subscribe`` URIs one downstream session may hold in one catalog."""


DEFAULT_DB_PASSWORD_ENV: Final = "CARTOGRAPH_DB_PASSWORD"  # noqa: S105 - a variable's name
DEFAULT_SPOOL_RECORDS: Final = 10_000
"""Audit records a replica may hold locally while its database is down (then: fail closed)."""
DEFAULT_DB_POOL_SIZE: Final = 4
DEFAULT_DB_TIMEOUT: Final = 5.0


class StorageConfig(_Section):
    """Where the usage log and the audit trail live (``cartograph.storage``).

    No ``url`` (the default): the usage log is SQLite in the state directory
    and the audit trail is ``[gateway] audit_log`` — nothing to run. A
    ``postgresql://user@host:port/db`` url puts both in PostgreSQL, shared by
    every replica; the password comes from the ``password_env`` variable, never
    from the file. A database outage spools audit records locally (at most
    ``spool_records``), then fails closed (``docs/fleet.md``).
    """

    url: str | None = None
    password_env: str = DEFAULT_DB_PASSWORD_ENV
    spool_records: int = Field(default=DEFAULT_SPOOL_RECORDS, ge=0)
    pool_size: int = Field(default=DEFAULT_DB_POOL_SIZE, ge=1, le=64)
    timeout: Seconds = DEFAULT_DB_TIMEOUT


DEFAULT_EXPORT_TIMEOUT: Final = 10.0
"""Seconds one OTLP export may take; exports run in a background thread, never on a request."""


class TelemetryConfig(_Section):
    """OpenTelemetry traces (``cartograph.telemetry``; the extra ``cartograph[otel]``).

    Off by default. ``traces = true`` exports one span per MCP request, with
    child spans for ``discover`` and each upstream call, over OTLP/HTTP. Where
    ``endpoint`` or ``service_name`` is left out, the standard variables
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` and
    ``OTEL_SERVICE_NAME`` fill in (docs/config.md).
    """

    traces: bool = False
    endpoint: str | None = Field(default=None, pattern=r"^https?://[^/\s]+", max_length=2048)
    service_name: str | None = Field(default=None, min_length=1, max_length=256)
    sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    """Share of new traces kept; a request whose caller sampled its trace follows the caller."""
    export_timeout: Seconds = DEFAULT_EXPORT_TIMEOUT


DEFAULT_CODE_WALL_TIME: Final = 30.0
"""Seconds one code-mode run may take in all: the program's own time and its inner calls."""
DEFAULT_CODE_MAX_MEMORY: Final = 64 * 1024 * 1024
DEFAULT_CODE_MAX_CALLS: Final = 50
DEFAULT_CODE_MAX_OUTPUT_BYTES: Final = 64 * 1024


class CodeModeConfig(_Section):
    """Code mode (``cartograph.codemode``; the extra ``cartograph[code]``): the ``run`` tool.

    Off by default. With ``enabled = true`` a catalog lists a fourth proxy tool that
    runs a Python program in the Monty sandbox, with the catalog's tools as async
    functions; every limit here is per run (docs/code-mode.md). ``allow_writes``
    holds ``server/tool`` globs of tools callable from code although their
    definition does not say ``readOnlyHint: true``. A catalog's own ``code_mode``
    table replaces this one for that catalog.
    """

    enabled: bool = False
    wall_time: Seconds = DEFAULT_CODE_WALL_TIME
    max_memory: int = Field(default=DEFAULT_CODE_MAX_MEMORY, ge=1024 * 1024, le=2**34)
    max_recursion_depth: int = Field(default=200, ge=10, le=1000)
    max_calls: int = Field(default=DEFAULT_CODE_MAX_CALLS, ge=0, le=10_000)
    """Inner tool calls (and discovers) one run may make, refused ones included."""
    max_parallel_calls: int = Field(default=4, ge=1, le=64)
    """Inner calls of one run in flight at once (``asyncio.gather``); the bulkhead bounds all."""
    max_output_bytes: int = Field(default=DEFAULT_CODE_MAX_OUTPUT_BYTES, ge=1024, le=2**24)
    """What a run may send back: its printed output (the rest is cut), and its value as JSON."""
    max_code_chars: int = Field(default=100_000, ge=1, le=10_000_000)
    workers: int = Field(default=2, ge=1, le=64)
    """Sandbox worker processes for the catalog: runs beyond these wait for one."""
    allow_writes: tuple[str, ...] = ()


LogFormat = Literal["text", "json"]


class LoggingConfig(_Section):
    """How ``serve`` writes log lines on stderr: ``text`` for people, ``json`` for collectors."""

    format: LogFormat = "text"


class TokenConfig(_Section):
    """A bearer token (read from an environment variable) mapped to a principal."""

    principal: str
    token_env: str
    catalogs: tuple[str, ...] = ("*",)
    admin: bool = False
    """May ``POST /admin/reload`` (re-verify and serve the card set; docs/fleet.md)."""


class HttpConfig(_Section):
    host: str = DEFAULT_HTTP_HOST
    port: int = Field(default=DEFAULT_HTTP_PORT, ge=0, le=65535)
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1024)
    mount_mode: MountMode = "per-catalog"
    # SIGTERM: in-flight calls get this long to finish, then end with `shutting_down` (P-REL-7).
    shutdown_grace: float = Field(default=DEFAULT_SHUTDOWN_GRACE, ge=0, le=3600)
    tokens: tuple[TokenConfig, ...] = ()

    @model_validator(mode="after")
    def _one_principal_per_token(self) -> HttpConfig:
        """P-AUTH-4: two entries for one principal (or one token) would let scopes mix."""
        check_token_entries(self.tokens)
        return self


def token_entry_label(index: int, entry: TokenConfig) -> str:
    """How an error names one ``[[http.tokens]]`` entry: never by its token value."""
    return f"[[http.tokens]] #{index + 1} (principal {entry.principal!r}, ${entry.token_env})"


def check_token_entries(tokens: Sequence[TokenConfig]) -> None:
    """Refuse a principal or a token variable written twice, naming both entries."""
    by_principal: dict[str, int] = {}
    by_env: dict[str, int] = {}
    for index, entry in enumerate(tokens):
        for seen, key, code, what in (
            (by_principal, entry.principal, codes.DUPLICATE_PRINCIPAL, "principal name"),
            (by_env, entry.token_env, codes.DUPLICATE_TOKEN, "token variable"),
        ):
            if key in seen:
                first = seen[key]
                raise ConfigError(
                    f"{token_entry_label(index, entry)} repeats the {what} of "
                    f"{token_entry_label(first, tokens[first])}: one token, one principal, one "
                    "scope; merge the two entries' catalogs into one entry.",
                    code=code,
                    key="http.tokens",
                )
            seen[key] = index


class CatalogPolicy(_Section):
    """What one catalog exposes: which proxy tools, which upstream tools, resources and prompts.

    ``allow``/``deny`` globs match ``server/tool``, ``server/prompt`` and
    ``server/resource-uri`` alike; ``passthrough`` turns upstream resources or prompts off,
    and an upstream's ``sampling``/``elicitation`` requests on, for the whole catalog.
    """

    proxy_tools: tuple[str, ...] = ("discover", "status", "call")
    allow: tuple[str, ...] = ("*",)
    deny: tuple[str, ...] = ()
    passthrough: tuple[Passthrough, ...] = ("resources", "prompts")
    secrets: SecretPolicy = Field(default_factory=SecretPolicy)
    """The secret scan of calls, resource reads and prompts: block and redact by default."""


def deny_disabled_tools(policy: CatalogPolicy, servers: Sequence[ServerConfig]) -> CatalogPolicy:
    """``policy`` plus a ``server/tool`` deny rule for each server's ``disabled_tools``.

    A tool the client file had disabled must stay disabled behind the proxy:
    the deny rule hides it from ``discover`` and refuses ``call`` like any other.
    """
    extra = [
        f"{_glob_literal(s.name)}/{_glob_literal(tool)}"
        for s in servers
        for tool in s.disabled_tools
    ]
    denies = tuple(dict.fromkeys((*policy.deny, *extra)))
    return policy if denies == policy.deny else policy.model_copy(update={"deny": denies})


def _glob_literal(name: str) -> str:
    """``name`` as an fnmatch pattern matching only itself (``[`` ``*`` ``?`` bracketed)."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in name)


class CatalogConfig(_Section):
    """A named federation served at ``/mcp/<name>``."""

    name: str
    servers: tuple[str, ...] = ()
    tool_prefix: str | None = None
    policy: CatalogPolicy = Field(default_factory=CatalogPolicy)
    code_mode: CodeModeConfig | None = None
    """This catalog's ``[code_mode]``; None: the top-level section's."""


class RiftConfig(_Section):
    """Rift's thresholds (paper §3.4); `cartograph rift` flags override them."""

    theta_sim: float = Field(default=0.65, gt=0, le=1)
    high: float = -0.05  # docs/rift.md "Validation": the paper's 0.10/0.20 is `rift --paper`
    medium: float = 0.30
    linkage: Literal["complete", "average", "single"] = "complete"
    text: Literal["description", "index"] = "description"
    probe: Literal["distinguishing", "arguments", "name+arguments"] = "distinguishing"


class Config(_Section):
    """A whole Cartograph configuration, after loading and path resolution."""

    source: Path | None = None
    state_dir: Path = Path(DEFAULT_STATE_DIR)
    catalog: Path | None = None
    servers: tuple[ServerConfig, ...] = ()
    cards: CardsConfig = Field(default_factory=CardsConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    learning: LearningConfig = Field(default_factory=LearningConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    rift: RiftConfig = Field(default_factory=RiftConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    code_mode: CodeModeConfig = Field(default_factory=CodeModeConfig)
    catalogs: tuple[CatalogConfig, ...] = ()

    @model_validator(mode="after")
    def _server_names_are_distinct(self) -> Config:
        """No two servers share a name, even after normalisation (P-NAME-1)."""
        seen: set[str] = set()
        for server in self.servers:
            if server.name in seen:
                raise ConfigError(
                    f"server {server.name!r} is defined twice; server names must be unique",
                    code=codes.CONFIG_DUPLICATE_SERVER,
                    server=server.name,
                )
            seen.add(server.name)
        check_names((NamedThing(s.name, f"server {s.name!r}") for s in self.servers), reserved=())
        return self

    @model_validator(mode="after")
    def _catalogs_fit_mount_mode(self) -> Config:
        """Refuse at load what docs/decisions/0001 forbids (serve re-checks with env/flag)."""
        mode = self.http.mount_mode
        check_catalog_names([c.name for c in self.catalogs], mode)
        known = {s.name for s in self.servers}
        for cat in self.catalogs:
            check_members(cat.name, cat.servers, known)
            if cat.tool_prefix is not None:
                check_explicit_prefix(cat.name, cat.tool_prefix, mode)
        return self

    def server(self, name: str) -> ServerConfig | None:
        return next((s for s in self.servers if s.name == name), None)

    def code_mode_for(self, catalog: str) -> CodeModeConfig:
        """Catalog ``catalog``'s code mode: its own table, else the top-level ``[code_mode]``."""
        own = next((c.code_mode for c in self.catalogs if c.name == catalog), None)
        return own if own is not None else self.code_mode

    @property
    def enabled_servers(self) -> tuple[ServerConfig, ...]:
        return tuple(s for s in self.servers if s.enabled)
