"""What an upstream asks its client for — a model sample, a user's answer — and who is asked.

An upstream server may ask its client, while it runs a tool, for a model sample
(``sampling/createMessage``) or for input from the user (``elicitation/create``).
Behind the proxy its client is Cartograph, and the one who can answer is the
downstream client whose call is running. This module keeps, per upstream session,
the calls in flight and the downstream caller of each (:class:`InFlight`), so that
the request is handed to that caller and to no other:

* the serving layer sets :data:`CALLER` for the downstream request it serves; a
  ``tools/call`` through this session records it for as long as it runs;
* when the upstream asks, the one downstream client with calls in flight here is
  the caller; with none, or with calls of two clients on one shared (``stateless``)
  session, nobody can be told apart and the request is refused
  (``input_request_unrouted``), never guessed;
* what happens next — the catalog's switch, the caller's declared capability, the
  audit record, the forwarding — is the :class:`InputAnswerer`'s, which the serving
  layer gives the session when it opens it. A session opened without one declares
  neither capability, so its upstream does not ask.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from mcp.client.session import ClientRequestContext, ElicitationFnT, SamplingFnT
from mcp.types import (
    INVALID_REQUEST,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
)

InputKind = Literal["sampling", "elicitation"]
INPUT_KINDS: Final[tuple[InputKind, ...]] = ("sampling", "elicitation")
METHODS: Final[dict[InputKind, str]] = {
    "sampling": "sampling/createMessage",
    "elicitation": "elicitation/create",
}

SamplingAnswer = CreateMessageResult | CreateMessageResultWithTools | ErrorData
ElicitationAnswer = ElicitResult | ErrorData


class Caller(Protocol):
    """The downstream request a call came from; the serving layer's own object."""

    @property
    def client(self) -> str | None:
        """The downstream client key (one per connection or HTTP session)."""


CALLER: ContextVar[Caller | None] = ContextVar("cartograph_input_caller", default=None)
"""The downstream request being served, set by the serving layer around it."""


@dataclass(frozen=True)
class Asked:
    """One upstream request for input: whose call it came from, and which tool was running."""

    server: str
    tool: str
    caller: Caller


class InputAnswerer(Protocol):
    """Decides, audits and forwards an upstream's request for input (the serving layer)."""

    @property
    def kinds(self) -> frozenset[InputKind]:
        """What the upstream may ask for: the capabilities its session declares."""

    async def sample(self, asked: Asked, params: CreateMessageRequestParams) -> SamplingAnswer: ...

    async def elicit(self, asked: Asked, params: ElicitRequestParams) -> ElicitationAnswer: ...

    async def unrouted(self, kind: InputKind, server: str, why: str) -> ErrorData:
        """The refusal (audited) of a request no single caller can be found for."""


def refusal(code: str, message: str) -> ErrorData:
    """The JSON-RPC error an upstream receives for a request for input the proxy refuses."""
    return ErrorData(code=INVALID_REQUEST, message=message, data={"code": code})


class InFlight:
    """One upstream session's ``tools/call`` requests in flight, each with its caller."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._calls: dict[int, tuple[str, Caller | None]] = {}
        self._ids = itertools.count()

    @contextmanager
    def calling(self, tool: str) -> Iterator[None]:
        """Record the request ``tool`` (a tool, or a method), and :data:`CALLER`, while it runs.

        A request with no caller (``cartograph call``, a request of the proxy's own)
        is recorded too: while it runs, no question can be told apart from it.
        """
        key = next(self._ids)
        self._calls[key] = (tool, CALLER.get())
        try:
            yield
        finally:
            del self._calls[key]

    def asked(self) -> Asked | str:
        """Who an upstream request now comes from, or why that cannot be said.

        The newest request of the one client with requests in flight: any of them
        reaches the same client, and the newest is surely still open.
        """
        calls = list(self._calls.values())
        clients = {caller.client if caller is not None else None for _tool, caller in calls}
        if not calls:
            return "no call is in flight on this upstream session"
        if None in clients:
            return "a request with no client to ask is in flight on this upstream session"
        if len(clients) > 1:
            return (
                f"{len(clients)} clients have calls in flight on this shared upstream session; "
                "which one asked cannot be told"
            )
        tool, caller = calls[-1]
        assert caller is not None
        return Asked(self.server, tool, caller)

    def callbacks(self, answerer: InputAnswerer | None) -> Callbacks:
        """The SDK ``Client``'s callbacks for what ``answerer`` answers (none: declared none)."""
        kinds = answerer.kinds if answerer is not None else frozenset()
        sampling = elicitation = None
        if answerer is not None and "sampling" in kinds:

            async def sampling(
                context: ClientRequestContext, params: CreateMessageRequestParams
            ) -> SamplingAnswer:
                asked = self.asked()
                if isinstance(asked, str):
                    return await answerer.unrouted("sampling", self.server, asked)
                return await answerer.sample(asked, params)

        if answerer is not None and "elicitation" in kinds:

            async def elicitation(
                context: ClientRequestContext, params: ElicitRequestParams
            ) -> ElicitationAnswer:
                asked = self.asked()
                if isinstance(asked, str):
                    return await answerer.unrouted("elicitation", self.server, asked)
                return await answerer.elicit(asked, params)

        return Callbacks(sampling, elicitation)


@dataclass(frozen=True)
class Callbacks:
    """What the upstream session's SDK client is given (and so declares to its server)."""

    sampling: SamplingFnT | None = None
    elicitation: ElicitationFnT | None = None


__all__ = [
    "CALLER",
    "INPUT_KINDS",
    "METHODS",
    "Asked",
    "Callbacks",
    "Caller",
    "InFlight",
    "InputAnswerer",
    "InputKind",
    "refusal",
]
