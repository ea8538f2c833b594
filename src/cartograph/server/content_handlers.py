"""One catalog's resources and prompts, as a mount serves them: list, map back, authorize, audit.

Upstream resources, templates and prompts are passed through under namespaced
names (``cartograph://<catalog>/<server>/<uri>``, ``<server>/<prompt>``, see
:mod:`cartograph.server.passthrough`). Each request gets the same single
authorization decision and single audit record as a proxy tool call (the
pipeline's record builder). :class:`~cartograph.server.handlers.ProxyHandlers`
holds one (``handlers.content``) and hands it the mount's catalog, policy,
prefix, authorization and audit sink.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import anyio
from mcp.types import (
    CompleteResult,
    CompletionArgument,
    GetPromptResult,
    Prompt,
    PromptReference,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
)

from cartograph import error_codes as codes
from cartograph.calls.pipeline import record_of
from cartograph.calls.secrets import refuse_secrets
from cartograph.config.model import CatalogPolicy
from cartograph.echo import echoed
from cartograph.errors import CartographError, PolicyError, UnknownToolError
from cartograph.gateway.audit import AuditSink, write_record
from cartograph.gateway.secret_scan import SecretScan
from cartograph.index.serving import policy_allows
from cartograph.server.call_context import Authorize, current_client
from cartograph.server.content_names import (
    MAX_URI_CHARS,
    canonical_prompt,
    canonical_server,
    canonical_uri,
    check_uri_length,
)
from cartograph.server.passthrough import (
    ChangeListener,
    UpdateListener,
    audit_uri,
    prompt_name,
    resource_uri,
    split_prompt_name,
    split_resource_uri,
)
from cartograph.server.pending import PendingRecord
from cartograph.server.runtime.catalog import CatalogRuntime
from cartograph.telemetry import annotate

_R = TypeVar("_R")

CompletionRef = PromptReference | ResourceTemplateReference


FIRST_LIST_WAIT: Final = 10.0
"""Seconds the first resources/prompts listing waits for servers still connecting."""


class ContentHandlers:
    """Resources, templates, prompts, completion and subscriptions for one catalog."""

    def __init__(
        self,
        runtime: CatalogRuntime,
        *,
        catalog: str,
        policy: CatalogPolicy,
        tool_prefix: str | None,
        authorize: Authorize | None,
        audit: AuditSink,
    ) -> None:
        self.runtime = runtime
        self.catalog = catalog
        self.policy = policy
        self.tool_prefix = tool_prefix
        self.authorize = authorize
        self.audit = audit

    def subscribe_changes(self, listener: ChangeListener) -> None:
        """Forward this catalog's resources/prompts ``list_changed`` to ``listener``."""
        self.runtime.content.subscribe(listener)

    def subscribe_updates(self, listener: UpdateListener) -> None:
        """Forward this catalog's ``notifications/resources/updated`` to ``listener``."""
        self.runtime.content.on_updated(listener)

    async def subscribe_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> None:
        """Authorize, map back, subscribe upstream and audit one ``resources/subscribe``."""
        await self._subscription("resources/subscribe", uri, principal, client)

    async def unsubscribe_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> None:
        """The same for ``resources/unsubscribe`` (forwarded once no client holds the URI)."""
        await self._subscription("resources/unsubscribe", uri, principal, client)

    async def _subscription(
        self, method: str, uri: str, principal: str | None, client: str | None
    ) -> None:
        record = PendingRecord(proxy_tool=method, arguments=None)
        client = client if client is not None else current_client()
        runtime = self.runtime
        send = (
            runtime.passthrough.subscribe_resource
            if method == "resources/subscribe"
            else runtime.passthrough.unsubscribe_resource
        )

        async def run() -> None:
            server, upstream = self._resource_target(uri, record)
            await send(server, upstream, principal=principal, client=client)

        await self._content_request(record, principal, run)

    def _listed(self, kind: str, server: str, name: str) -> str | None:
        """The canonical spelling ``name`` is listed under, or None: not listed (P-URI-1).

        A name with no canonical spelling could not be read, so it is not offered.
        """
        if kind not in self.policy.passthrough:
            return None
        try:
            canonical = canonical_uri(name) if kind == "resources" else canonical_prompt(name)
        except PolicyError:
            return None
        return canonical if policy_allows(self.policy, server, canonical) else None

    async def content_settled(self) -> None:
        """Before the first listing: the servers still connecting, within a bound."""
        await self.runtime.settled(FIRST_LIST_WAIT)

    def list_resources(self) -> list[Resource]:
        return [
            r.model_copy(update={"uri": resource_uri(self.catalog, server, uri)})
            for server, listing in self.runtime.passthrough.content_listings()
            for r in listing.resources
            if (uri := self._listed("resources", server, r.uri)) is not None
        ]

    def list_resource_templates(self) -> list[ResourceTemplate]:
        return [
            t.model_copy(update={"uri_template": resource_uri(self.catalog, server, uri)})
            for server, listing in self.runtime.passthrough.content_listings()
            for t in listing.templates
            if (uri := self._listed("resources", server, t.uri_template)) is not None
        ]

    def list_prompts(self) -> list[Prompt]:
        return [
            p.model_copy(update={"name": prompt_name(server, p.name, self.tool_prefix)})
            for server, listing in self.runtime.passthrough.content_listings()
            for p in listing.prompts
            if self._listed("prompts", server, p.name) is not None
        ]

    async def read_resource(
        self, uri: str, *, principal: str | None, client: str | None = None
    ) -> ReadResourceResult:
        """Authorize, map back, read through the gateway and audit one ``resources/read``."""
        record = PendingRecord(proxy_tool="resources/read", arguments=None)
        client = client if client is not None else current_client()

        async def read() -> ReadResourceResult:
            server, upstream = self._resource_target(uri, record)
            self._refuse_secrets(record, upstream, "this resource read", server)
            result = await self.runtime.passthrough.read_resource(
                server, upstream, principal=principal, client=client
            )
            result, record.secrets["result"] = self._scan.read_result(result, redact=self._redact)
            contents = [
                c.model_copy(update={"uri": resource_uri(self.catalog, server, c.uri)})
                for c in result.contents
            ]
            return result.model_copy(update={"contents": contents})

        return await self._content_request(record, principal, read)

    def _resource_target(self, uri: str, record: PendingRecord) -> tuple[str, str]:
        """``(server, canonical upstream URI)``: what policy judges, the record names and
        the upstream is sent (P-URI-1); an ambiguous spelling is recorded as it came
        (bounded: the record keeps a long name's start and digest, see cartograph.echo).
        A URI over the length limit is refused before it is split or read."""
        if len(uri) > MAX_URI_CHARS:
            record.tool = uri  # the record builder keeps its start, length and digest
            check_uri_length(uri)
        parts = split_resource_uri(uri)
        if parts is None or parts[0] != self.catalog:
            raise UnknownToolError(
                f"no resource {echoed(uri)!r} in catalog {self.catalog!r}; its resources are "
                f"cartograph://{self.catalog}/<server>/<uri> (see resources/list)",
                code=codes.UNKNOWN_RESOURCE,
            )
        _catalog, server, upstream = parts
        record.server, record.tool = server, audit_uri(upstream)
        return server, self._judged("resources", server, upstream, record)

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None,
        *,
        principal: str | None,
        client: str | None = None,
    ) -> GetPromptResult:
        """Authorize, map back, render through the gateway and audit one ``prompts/get``."""
        record = PendingRecord(proxy_tool="prompts/get", arguments=arguments)
        client = client if client is not None else current_client()

        async def get() -> GetPromptResult:
            server, prompt = self._prompt_target(name, record)
            self._refuse_secrets(record, [prompt, arguments], f"prompt {server}/…", server)
            result = await self.runtime.passthrough.get_prompt(
                server, prompt, arguments, principal=principal, client=client
            )
            result, record.secrets["result"] = self._scan.prompt_result(result, redact=self._redact)
            return result

        return await self._content_request(record, principal, get)

    async def complete(
        self,
        ref: CompletionRef,
        argument: CompletionArgument,
        context_arguments: dict[str, str] | None,
        *,
        principal: str | None,
        client: str | None = None,
    ) -> CompleteResult:
        """Authorize, map the prompt or template back, complete and audit one argument.

        The same names, allow/deny policy and audit as ``prompts/get`` and
        ``resources/read``; the record names the argument (its shape), never its value.
        """
        record = PendingRecord(
            proxy_tool="completion/complete", arguments={argument.name: argument.value}
        )
        client = client if client is not None else current_client()

        async def complete() -> CompleteResult:
            server, upstream_ref = self._completion_target(ref, record)
            return await self.runtime.passthrough.complete(
                server,
                upstream_ref,
                argument,
                context_arguments,
                principal=principal,
                client=client,
            )

        return await self._content_request(record, principal, complete)

    def _completion_target(
        self, ref: CompletionRef, record: PendingRecord
    ) -> tuple[str, CompletionRef]:
        """``(server, the upstream's own reference)``; the record names it before policy runs."""
        if isinstance(ref, ResourceTemplateReference):
            server, upstream = self._resource_target(ref.uri, record)
            return server, ResourceTemplateReference(uri=upstream)
        server, prompt = self._prompt_target(ref.name, record)
        return server, PromptReference(name=prompt)

    def _prompt_target(self, name: str, record: PendingRecord) -> tuple[str, str]:
        """``(server, upstream prompt name)``, judged as spelt; an ambiguous name is refused."""
        parts = split_prompt_name(name, self.tool_prefix)
        if parts is None:
            raise UnknownToolError(
                f"no prompt {echoed(name)!r} in catalog {self.catalog!r}; prompts are named "
                f"{self.tool_prefix or ''}<server>/<prompt> (see prompts/list)",
                code=codes.UNKNOWN_PROMPT,
            )
        server, prompt = record.server, record.tool = parts
        return server, self._judged("prompts", server, prompt, record)

    @property
    def _scan(self) -> SecretScan:
        return SecretScan.of(self.runtime.redactor)

    @property
    def _redact(self) -> bool:
        return self.policy.secrets.results == "redact"

    def _refuse_secrets(self, record: PendingRecord, data: object, what: str, server: str) -> None:
        """P-SEC-1 for resources/read and prompts/get: what the upstream would be sent.

        The record's URI or name, and the refusal, then never spell the secret out."""
        record.secrets["arguments"] = kinds = self._scan.kinds(data)
        if kinds and record.tool is not None:
            record.tool, _ = self._scan.redact(record.tool)
        refuse_secrets(self.catalog, self.policy, kinds, what, server)

    def _judged(self, kind: str, server: str, name: str, record: PendingRecord) -> str:
        """The one spelling of ``name`` that policy judged, the record names and the
        upstream gets (P-URI-1); raises when passthrough, the spelling or allow/deny refuse."""
        if kind not in self.policy.passthrough:
            raise PolicyError(
                f"catalog {self.catalog!r} does not pass upstream {kind} through "
                f'(catalogs[name="{self.catalog}"].policy.passthrough)',
                code=codes.RESOURCES_OFF if kind == "resources" else codes.PROMPTS_OFF,
            )
        if kind == "resources":
            canonical_server(server)
            name = canonical_uri(name)
            record.tool = audit_uri(name)
        else:
            canonical_prompt(f"{server}/{name}")
        if not policy_allows(self.policy, server, name):
            raise PolicyError(
                f"{echoed(f'{server}/{name}')} is not allowed in catalog {self.catalog!r} "
                f'(catalogs[name="{self.catalog}"].policy allow/deny)',
                code=codes.RESOURCE_DENIED if kind == "resources" else codes.PROMPT_DENIED,
                server=server,
            )
        return name

    async def _content_request(
        self, record: PendingRecord, principal: str | None, run: Callable[[], Awaitable[_R]]
    ) -> _R:
        """One authorization decision and one audit record, as for a proxy tool call."""
        outcome = "cancelled"
        annotate(catalog=self.catalog)
        try:
            if self.authorize is not None:
                self.authorize(principal, self.catalog, record.proxy_tool)
            result = await run()
            outcome = "ok"
            return result
        except CartographError as exc:
            outcome = exc.code
            raise redact(exc, self.runtime) from None
        finally:
            annotate(server=record.server, tool=record.tool)
            with anyio.CancelScope(shield=True):  # a cancelled request is audited too
                entry = record_of(
                    record, outcome, catalog=self.catalog, principal=principal, trace=record.trace
                )
                await write_record(self.audit, entry)


def redact(exc: CartographError, runtime: CatalogRuntime) -> CartographError:
    exc.message = runtime.redactor(exc.message)
    exc.details = runtime.redactor.data(exc.details)
    return exc
