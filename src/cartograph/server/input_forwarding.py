"""An upstream's sampling and elicitation requests, forwarded to the client whose call caused them.

While it runs a tool, an upstream may ask its client for a model sample
(``sampling/createMessage``) or for the user's input (``elicitation/create``).
Which downstream request a question belongs to is found by the upstream session
(:mod:`cartograph.upstream.input_requests`: the one client with calls in flight
on it); this module is what happens next, for one catalog (:class:`InputGate`):

1. the catalog must have turned the kind on (``policy.passthrough`` lists
   ``sampling`` / ``elicitation``; off by default), else its sessions never
   declared the capability and the upstream was not invited to ask;
2. the caller must have declared the capability itself (``sampling_not_supported``,
   ``elicitation_not_supported``) — the proxy never answers in its place;
3. the request goes to that caller alone, on the stream of the call that caused it
   (``related_request_id``), bounded by the server's ``call_timeout``; what the
   client answers goes back to the upstream unchanged (``input_request_failed``
   when it refuses, fails or does not answer);
4. one audit record each, refusals included: ``proxy_tool`` the method, the
   caller's principal and trace, ``server`` and ``tool`` the call that asked, the
   request's shape (never its text).

A request the session cannot attribute (no call in flight, or calls of two clients
on one shared session) is refused with ``input_request_unrouted`` and audited
under the catalog. Handshake-era downstream connections only: a 2026-07-28 client
has no channel for a server's request, and is refused the same way as one that
did not declare the capability.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    RequestId,
)
from pydantic import BaseModel

from cartograph import error_codes as codes
from cartograph.config.model import CatalogPolicy, ServerConfig
from cartograph.gateway.audit import AuditRecord, AuditSink, argument_shape, utc_now, write_record
from cartograph.gateway.pool import Opener, Upstream, default_opener
from cartograph.upstream.input_requests import (
    INPUT_KINDS,
    METHODS,
    Asked,
    ElicitationAnswer,
    InputKind,
    SamplingAnswer,
    refusal,
)

_NOT_DECLARED: Final[dict[InputKind, str]] = {
    "sampling": codes.SAMPLING_NOT_SUPPORTED,
    "elicitation": codes.ELICITATION_NOT_SUPPORTED,
}


@dataclass(frozen=True)
class Downstream:
    """The downstream request being served: where a request for input goes back to."""

    session: ServerSession
    request_id: RequestId | None
    client: str | None
    principal: str | None = None
    trace: str | None = None

    def refuses(self, kind: InputKind) -> str | None:
        """Why ``kind`` cannot be asked of this client, or None: it declared it, and its
        connection carries a server's requests (a handshake-era one)."""
        caps = self.session.client_capabilities
        if caps is None or getattr(caps, kind, None) is None:
            return f"the client did not declare the {kind} capability"
        if not self.session.can_send_request:
            return (
                f"the client's {self.session.protocol_version} connection carries no request "
                "from the server; Cartograph forwards them on handshake-era connections only"
            )
        return None


class InputGate:
    """One catalog's :class:`~cartograph.upstream.input_requests.InputAnswerer`."""

    def __init__(
        self,
        catalog: str,
        kinds: frozenset[InputKind],
        audit: AuditSink,
        timeouts: Mapping[str, float],
    ) -> None:
        self.catalog = catalog
        self.kinds = kinds
        self._audit = audit
        self._timeouts = timeouts

    async def sample(self, asked: Asked, params: CreateMessageRequestParams) -> SamplingAnswer:
        result: type[CreateMessageResult | CreateMessageResultWithTools] = (
            CreateMessageResultWithTools if params.tools else CreateMessageResult
        )
        request = CreateMessageRequest(params=params)
        found = await self._forward("sampling", asked, params, request, result)
        assert isinstance(found, CreateMessageResult | CreateMessageResultWithTools | ErrorData)
        return found

    async def elicit(self, asked: Asked, params: ElicitRequestParams) -> ElicitationAnswer:
        request = ElicitRequest(params=params)
        found = await self._forward("elicitation", asked, params, request, ElicitResult)
        assert isinstance(found, ElicitResult | ErrorData)
        return found

    async def unrouted(self, kind: InputKind, server: str, why: str) -> ErrorData:
        code = codes.INPUT_REQUEST_UNROUTED
        await self._record(kind, server, None, None, code, time.perf_counter(), None)
        return refusal(code, f"Cartograph did not forward {METHODS[kind]}: {why}")

    async def _forward(
        self,
        kind: InputKind,
        asked: Asked,
        params: BaseModel,
        request: CreateMessageRequest | ElicitRequest,
        result: type[BaseModel],
    ) -> BaseModel:
        started, outcome = time.perf_counter(), "cancelled"
        caller = asked.caller
        downstream = caller if isinstance(caller, Downstream) else None
        try:
            answer, outcome = await self._answer(kind, asked, downstream, request, result)
            return answer
        finally:
            await self._record(kind, asked.server, asked.tool, downstream, outcome, started, params)

    async def _answer(
        self,
        kind: InputKind,
        asked: Asked,
        downstream: Downstream | None,
        request: CreateMessageRequest | ElicitRequest,
        result: type[BaseModel],
    ) -> tuple[BaseModel, str]:
        method = METHODS[kind]
        if downstream is None:
            code = codes.INPUT_REQUEST_UNROUTED
            return refusal(code, f"Cartograph did not forward {method}: no client to ask"), code
        why = downstream.refuses(kind)
        if why is not None:
            code = _NOT_DECLARED[kind]
            return refusal(code, f"Cartograph did not forward {method}: {why}"), code
        metadata = ServerMessageMetadata(related_request_id=downstream.request_id)
        timeout = self._timeouts.get(asked.server)
        try:
            with anyio.fail_after(timeout):
                answered = await downstream.session.send_request(request, result, metadata=metadata)
        except MCPError as exc:  # the client's own "no": passed on as it said it
            return exc.error, codes.INPUT_REQUEST_FAILED
        except TimeoutError:
            code = codes.INPUT_REQUEST_FAILED
            why = f"the client did not answer {method} within {timeout:g}s (call_timeout)"
            return refusal(code, why), code
        except ValueError:  # the client's answer does not fit the method's result
            code = codes.INPUT_REQUEST_FAILED
            return refusal(code, f"the client's answer to {method} is malformed"), code
        return answered, "ok"

    async def _record(
        self,
        kind: InputKind,
        server: str,
        tool: str | None,
        caller: Downstream | None,
        outcome: str,
        started: float,
        params: BaseModel | None,
    ) -> None:
        shape: Any = None
        if params is not None:
            shape = argument_shape(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        record = AuditRecord(
            time=utc_now(),
            catalog=self.catalog,
            principal=caller.principal if caller is not None else None,
            proxy_tool=METHODS[kind],
            server=server,
            tool=tool,
            duration_ms=round((time.perf_counter() - started) * 1000.0, 3),
            outcome=outcome,
            arguments=shape,
            trace=caller.trace if caller is not None else None,
        )
        with anyio.CancelScope(shield=True):  # a cancelled request is audited too
            await write_record(self._audit, record)


def input_gate(
    catalog: str, policy: CatalogPolicy, audit: AuditSink, servers: Sequence[ServerConfig]
) -> InputGate | None:
    """The catalog's gate when its ``passthrough`` turns sampling or elicitation on."""
    kinds = frozenset(k for k in INPUT_KINDS if k in policy.passthrough)
    if not kinds:
        return None
    return InputGate(catalog, kinds, audit, {s.name: s.call_timeout for s in servers})


def answering(opener: Opener, gate: InputGate | None) -> Opener:
    """``opener``, opening sessions that take their upstream's requests for input to ``gate``.

    Only the default opener: another (an in-process test server) opens as it likes.
    """
    if gate is None or opener is not default_opener:
        return opener

    async def open_answering(cfg: ServerConfig) -> Upstream:
        from cartograph.upstream.session import UpstreamSession

        return await UpstreamSession.open(cfg, answerer=gate)

    return open_answering


__all__ = ["Downstream", "InputGate", "answering", "input_gate"]
