"""The ordered steps of one proxy tool call, and its one audit record.

Every caller runs :func:`run_call`: the ``call`` tool of each mount (stdio,
each HTTP per-catalog endpoint), the routed mount once it has resolved the
catalog (it hands the call to that catalog's mount), and generated stubs
(which send ``call`` over MCP). So every decision about a call is made here,
once, in this order; each step raises a :class:`~cartograph.errors.CartographError`
to refuse, and every refusal comes before any upstream I/O::

    authorize     the principal may use this proxy tool in this catalog (P-AUTH-3)
    resolve       the proxy tool exposed here; for ``call``, the meta-call read and
                  repaired into server, tool and arguments
    -- discover and status are answered by the mount here; a tool call goes on --
    audit_open    fail closed while the audit trail cannot keep one more record
    policy        the catalog's allow/deny over server/tool
    known_server  the server is in this catalog
    card_intact   the card's signature, header and this tool's entry (P-SIG-3)
    drift         the tool is attested and its live definition still matches
    transform     a reshaped tool's call mapped to the upstream's name and arguments
                  (hidden ones filled in; calls/transform.py)
    validate      the arguments match the attested (served) input schema (P-TOOL-1),
                  and a mapped call the upstream's
    scan_arguments  no secret in the arguments, or none sent (P-SEC-1; calls/secrets.py)
    forward       the gateway: breaker, bulkhead, pool partition, deadline
    redact_secrets  each secret in the result replaced by a marker naming its class
    limit         an upstream error result redacted, a result over the size limit cut
    note_repairs  the repairs ``resolve`` made, told beside the upstream's result

then, however the call ended (refused, failed, answered, cancelled), its one
audit record (P-LOG-2), durable before the answer goes out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

import anyio
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import CallToolResult, TextContent

from cartograph import error_codes as codes
from cartograph.calls.arguments import (
    MetaCall,
    SchemaValidators,
    repair_meta_call,
    validate_arguments,
)
from cartograph.calls.request import Answer, Call, CallRequest
from cartograph.calls.secrets import redact_secrets, scan_arguments
from cartograph.calls.transform import check_upstream, transform
from cartograph.cards.drift import DriftReport
from cartograph.cards.verified import VerifiedCards
from cartograph.config.model import CatalogPolicy, GatewayConfig, ServerConfig
from cartograph.errors import (
    AuditUnavailable,
    CartographError,
    PolicyError,
    UnknownToolError,
)
from cartograph.gateway.audit import (
    AuditRecord,
    AuditSink,
    Redactor,
    argument_shape,
    utc_now,
    write_record,
)
from cartograph.gateway.pool import partition_key
from cartograph.gateway.results import (
    error_code,
    error_result,
    limit_result,
    redact_error_result,
)
from cartograph.gateway.secret_scan import redacted_shape
from cartograph.index.serving import tool_allowed
from cartograph.suggest import did_you_mean
from cartograph.telemetry import annotate

logger = logging.getLogger(__name__)

Authorize = Callable[[str | None, str, str], None]
"""``authorize(principal, catalog, proxy_tool_name)``; raises PolicyError to refuse."""


class Forwarder(Protocol):
    """What ``forward`` sends a call through (``gateway.gateway.Gateway`` is one)."""

    @property
    def settings(self) -> GatewayConfig:
        """``[gateway]``: ``limit`` reads ``max_result_bytes`` here."""

    async def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        client: str | None = None,
        progress_callback: ProgressFnT | None = None,
    ) -> CallToolResult: ...


class CatalogState(Protocol):
    """What the steps read from one catalog, live (``server.runtime.CatalogRuntime`` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def servers(self) -> Mapping[str, ServerConfig]: ...
    @property
    def cards(self) -> VerifiedCards: ...
    @property
    def drift(self) -> DriftReport: ...
    @property
    def policy(self) -> CatalogPolicy: ...
    @property
    def gateway(self) -> Forwarder: ...
    @property
    def redactor(self) -> Redactor: ...
    @property
    def validators(self) -> SchemaValidators: ...


class CallSite(Protocol):
    """Where calls arrive: one catalog's tool surface (``server.handlers.ProxyHandlers``).

    Read at every call, so a mount's settings changed while it serves apply
    to the next call.
    """

    @property
    def catalog(self) -> str: ...
    @property
    def policy(self) -> CatalogPolicy: ...
    @property
    def audit(self) -> AuditSink: ...
    @property
    def authorize(self) -> Authorize | None: ...
    @property
    def tool_prefix(self) -> str | None: ...
    @property
    def exposed(self) -> tuple[str, ...]:
        """The proxy tools this mount serves, unprefixed."""

    @property
    def answers(self) -> Mapping[str, Answer]:
        """The exposed proxy tools the mount answers itself; every other one is a tool call."""

    @property
    def runtime(self) -> CatalogState: ...


Step = Callable[[CallSite, Call], Awaitable[None]]


# -- admission: every proxy tool -------------------------------------------------------


async def authorize(site: CallSite, call: Call) -> None:
    """The principal may use this proxy tool in this catalog (P-AUTH-3).

    First of all: a principal outside this catalog must not learn which
    tools its policy exposes (the refusal would differ otherwise).
    """
    if site.authorize is None:
        return
    name, prefix = call.request.name, site.tool_prefix or ""
    bare = name[len(prefix) :] if prefix and name.startswith(prefix) else name
    site.authorize(call.request.principal, site.catalog, bare)


async def resolve(site: CallSite, call: Call) -> None:
    """The proxy tool the name means here; for a tool call, its target (``bad_meta_call``)."""
    name, prefix = call.request.name, site.tool_prefix or ""
    bare = name[len(prefix) :] if name.startswith(prefix) else None
    if bare is None or bare not in site.exposed:
        raise UnknownToolError(
            f"this server has no tool {name!r}; its tools are "
            f"{', '.join(prefix + tool for tool in site.exposed)}",
            code=codes.UNKNOWN_PROXY_TOOL,
        )
    call.proxy_tool = bare
    annotate(proxy_tool=bare)
    call.answer = site.answers.get(bare)
    if call.answer is None:
        catalog = site.runtime
        call.target = repair_meta_call(call.request.arguments, lambda s, t: carded(catalog, s, t))
        annotate(server=call.target.server, tool=call.target.tool)


def carded(catalog: CatalogState, server: str, tool: str) -> bool:
    """Whether ``server`` has a verified card listing ``tool`` (drifted or not)."""
    card = catalog.cards.get(server)
    return card is not None and card.body.tool(tool) is not None


# -- a tool call ---------------------------------------------------------------------


async def audit_open(site: CallSite, call: Call) -> None:
    """Fail closed before any upstream I/O while the audit trail is degraded (docs/fleet.md)."""
    if site.audit.degraded:
        await anyio.to_thread.run_sync(site.audit.admit)


async def policy(site: CallSite, call: Call) -> None:
    """The catalog's allow/deny over ``server/tool`` (``tool_denied``).

    A tool served under another name is matched by both names: a rule that
    denies either denies it (a client file's ``disabledTools`` name the
    upstream's), and one that allows either allows it.
    """
    target = call.resolved
    names = {target.tool, _upstream_name(site.runtime, target.server, target.tool)}
    if not tool_allowed(site.policy, target.server, names):
        raise PolicyError(
            f"{target.server}/{target.tool} is not allowed in catalog {site.catalog!r} "
            f'(catalogs[name="{site.catalog}"].policy allow/deny)',
            code=codes.TOOL_DENIED,
            server=target.server,
            tool=target.tool,
        )


def _upstream_name(catalog: CatalogState, server: str, tool: str) -> str:
    """The upstream's name of the tool ``server`` serves as ``tool`` (``tool`` when none)."""
    card = catalog.cards.get(server) if server in catalog.servers else None
    entry = card.body.tool(tool) if card is not None else None
    return entry.upstream_name if entry is not None else tool


async def known_server(site: CallSite, call: Call) -> None:
    """The server is in this catalog (else ``unknown_server``, with a did-you-mean)."""
    server, catalog = call.resolved.server, site.runtime
    if server not in catalog.servers:
        raise UnknownToolError(
            f"no server {server!r} in catalog {catalog.name!r}; "
            f"{did_you_mean(server, catalog.servers, what='servers in it')}",
            code=codes.UNKNOWN_SERVER,
            server=server,
        )


async def card_intact(site: CallSite, call: Call) -> None:
    """P-SIG-3: what this call serves (signature, header, this tool) is re-checked."""
    target, cards = call.resolved, site.runtime.cards
    if target.server in cards:
        call.tool_card = cards.ensure_tool_intact(target.server, target.tool)


async def drift(site: CallSite, call: Call) -> None:
    """The tool is attested and its live definition still matches the card."""
    admit(site.runtime, call.resolved.server, call.resolved.tool)


def admit(catalog: CatalogState, server: str, tool: str) -> None:
    """Raise unless ``server/tool`` is attested and its live definition still matches.

    Cheap (no re-canonicalisation), so the gateway re-runs it after every
    (re)open of a session, when a restarted upstream may have changed its
    tools; ``card_intact`` checks the card's integrity once before that.
    """
    card = catalog.cards.get(server)
    entry = catalog.drift.get(server, tool)
    if card is None or card.body.tool(tool) is None:
        if entry is not None:
            raise entry.error()
        hint = did_you_mean(tool, _offered_tools(catalog, server), what="tools on it")
        raise UnknownToolError(
            f"no tool {tool!r} on server {server!r} in catalog {catalog.name!r}; "
            f"{hint} (`discover` finds the right one)",
            server=server,
            tool=tool,
        )
    if entry is not None and not entry.exposed:
        raise entry.error()


def admit_upstream(catalog: CatalogState, server: str, upstream: str) -> None:
    """:func:`admit` for a tool named as its upstream lists it (the gateway's re-check)."""
    card = catalog.cards.get(server)
    entry = card.body.by_upstream(upstream) if card is not None else None
    admit(catalog, server, entry.name if entry is not None else upstream)


def _offered_tools(catalog: CatalogState, server: str) -> list[str]:
    """Tools of ``server`` a suggestion may name: carded, exposed, allowed by policy."""
    card = catalog.cards.get(server)
    if card is None:
        return []
    return [
        t.name
        for t in card.body.tools
        if tool_allowed(catalog.policy, server, {t.name, t.upstream_name})
        and ((e := catalog.drift.get(server, t.name)) is None or e.exposed)
    ]


async def validate(site: CallSite, call: Call) -> None:
    """The arguments match the attested input schema (``bad_arguments`` shows it).

    For a reshaped tool that is the served (narrowed) schema; the call
    ``transform`` mapped must then match the upstream's (``transform_mismatch``).
    """
    target, tool_card = call.resolved, call.tool_card
    assert tool_card is not None  # drift refuses a tool the card does not have
    validators = site.runtime.validators
    validate_arguments(
        target.server,
        target.tool,
        tool_card.input_schema,
        target.arguments,
        tool_card.example,
        validator=validators.get(target.server, tool_card),
    )
    if call.upstream is not None:
        mapped = validators.get(target.server, tool_card, upstream=True)
        check_upstream(target.server, tool_card, call.upstream.arguments, mapped)


async def forward(site: CallSite, call: Call) -> None:
    """Send it upstream through the gateway, on the caller's pool partition.

    What is sent is :attr:`Call.sent`: for a reshaped tool, the mapped call.
    """
    target, request = call.sent, call.request
    call.result = await site.runtime.gateway.call(
        target.server,
        target.tool,
        target.arguments,
        client=partition_key(request.principal, request.client),
        progress_callback=request.progress,
    )


async def limit(site: CallSite, call: Call) -> None:
    """Redact an upstream error result (P-LOG-1); cut one over the size limit (P-REL-5).

    The limit is ``[gateway] max_result_bytes``; a cut result says so in a
    marker block and ``_meta["cartograph/truncated"]``.
    """
    assert call.result is not None  # forward set it
    catalog = site.runtime
    redacted = redact_error_result(call.result, catalog.redactor)
    call.result = limit_result(redacted, catalog.gateway.settings.max_result_bytes)


async def note_repairs(site: CallSite, call: Call) -> None:
    """Say what the meta-call repair changed, beside the upstream's own content."""
    assert call.result is not None  # forward set it
    call.result = with_repairs(call.result, call.resolved)


def with_repairs(result: CallToolResult, meta: MetaCall) -> CallToolResult:
    """``result`` with the repairs in ``_meta["cartograph/repaired"]`` and a last text block."""
    if not meta.repairs:
        return result
    note = {"cartograph/repaired": list(meta.repairs)}
    text = TextContent(text=f"[cartograph repaired this call: {'; '.join(meta.repairs)}]")
    return result.model_copy(
        update={"meta": {**(result.meta or {}), **note}, "content": [*result.content, text]}
    )


ADMISSION: Final[tuple[Step, ...]] = (authorize, resolve)
"""What every proxy tool goes through; ``discover`` and ``status`` are then answered."""

TOOL_CALL: Final[tuple[Step, ...]] = (
    audit_open,
    policy,
    known_server,
    card_intact,
    drift,
    transform,
    validate,
    scan_arguments,
    forward,
    redact_secrets,
    limit,
    note_repairs,
)
"""What a tool call goes through after admission, in order."""

STEPS: Final[tuple[Step, ...]] = (*ADMISSION, *TOOL_CALL)


# -- running them, and the one record ----------------------------------------------------


async def run_call(site: CallSite, request: CallRequest) -> tuple[Call, CallToolResult]:
    """Run ``request`` through the steps at ``site``, then write its one audit record.

    Refusals and upstream failures come back as ``isError`` results carrying
    a stable code (secrets redacted); only cancellation propagates, after its
    record is written. When the record can be neither stored nor spooled the
    answer is withheld: the result is then ``audit_unavailable``.
    """
    if request.catalog != site.catalog:
        raise ValueError(f"a call for catalog {request.catalog!r} cannot run in {site.catalog!r}")
    call = Call(request)
    annotate(catalog=site.catalog)
    try:
        result = await _answer(site, call)
    except CartographError as exc:
        result = error_result(_redacted(exc, site.runtime.redactor))
    except BaseException:
        # Cancelled (the client gave up, or shutdown): still exactly one record.
        with anyio.CancelScope(shield=True):
            try:
                await write_record(site.audit, audit_record(call, outcome_of(None)))
            except AuditUnavailable as exc:
                logger.error("audit record lost for a cancelled call: %s", exc.message)
        raise
    try:
        await write_record(site.audit, audit_record(call, outcome_of(result)))
    except AuditUnavailable as exc:  # neither stored nor spooled: the answer is withheld
        logger.error("audit record lost for %s: %s", call.proxy_tool, exc.message)
        result = error_result(exc)
    return call, result


async def _answer(site: CallSite, call: Call) -> CallToolResult:
    for step in ADMISSION:
        await step(site, call)
    if call.answer is not None:
        return await call.answer(call)
    for step in TOOL_CALL:
        await step(site, call)
    assert call.result is not None  # forward set it
    return call.result


class Recorded(Protocol):
    """What an audit record says of a request besides where and who: a :class:`Call` has it,
    and so has a resources/prompts request's record (``server/pending.py``)."""

    @property
    def proxy_tool(self) -> str: ...
    @property
    def server(self) -> str | None: ...
    @property
    def tool(self) -> str | None: ...
    @property
    def arguments(self) -> Any: ...
    @property
    def repairs(self) -> tuple[str, ...]: ...
    @property
    def secrets(self) -> Mapping[str, tuple[str, ...]]: ...
    @property
    def started(self) -> float: ...


def audit_record(call: Call, outcome: str) -> AuditRecord:
    """The call's record: what was known when it ended, the arguments as their shape only."""
    request = call.request
    return record_of(
        call, outcome, catalog=request.catalog, principal=request.principal, trace=request.trace
    )


def record_of(
    facts: Recorded, outcome: str, *, catalog: str, principal: str | None, trace: str | None
) -> AuditRecord:
    """The one audit record builder, for tool calls and content requests alike."""
    return AuditRecord(
        time=utc_now(),
        catalog=catalog,
        principal=principal,
        proxy_tool=facts.proxy_tool,
        server=facts.server,
        tool=facts.tool,
        duration_ms=round((time.perf_counter() - facts.started) * 1000.0, 3),
        outcome=outcome,
        arguments=redacted_shape(argument_shape(facts.arguments), facts.secrets),
        repairs=facts.repairs,
        trace=trace,
        secrets={kind: seen for kind, seen in facts.secrets.items() if seen} or None,
    )


def outcome_of(result: CallToolResult | None) -> str:
    """The record's ``outcome``: ``ok``, the refusal's code, ``tool_error`` or ``cancelled``."""
    if result is None:
        return "cancelled"
    return error_code(result) or ("tool_error" if result.is_error else "ok")


def _redacted(exc: CartographError, redactor: Redactor) -> CartographError:
    exc.message = redactor(exc.message)
    exc.details = redactor.data(exc.details)
    return exc
