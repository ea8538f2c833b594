"""Audit records for the refusals the HTTP layer answers itself (P-AUDIT-1).

A request refused before any catalog's handlers run — a foreign ``Host``
(421) or ``Origin`` (403), a missing or wrong token (401), a catalog the
principal may not use, an oversized body (413), an unknown session — used to
leave no trace, so token guessing was invisible. Each now writes one record
to the same audit trail the tool calls use. The record holds the status,
the refusal code, the request path (bounded, without its query string), the
authenticated principal when there is one, and never a header value: no
token can reach it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from starlette.types import Message, Scope, Send

from cartograph import error_codes as codes
from cartograph.gateway.audit import AuditRecord, AuditSink, utc_now, write_record

MAX_AUDIT_PATH: Final = 256
"""Characters of the request path kept in a record; a longer path is cut, never dropped."""

SDK_REFUSALS: Final[Mapping[int, str]] = {
    400: codes.BAD_REQUEST,
    404: codes.UNKNOWN_SESSION,
    405: codes.METHOD_NOT_ALLOWED,
    406: codes.NOT_ACCEPTABLE,
    413: codes.BODY_TOO_LARGE,
    415: codes.UNSUPPORTED_MEDIA_TYPE,
}
"""Outcome codes for the statuses the SDK's session manager answers with on its own."""


@dataclass(frozen=True, slots=True)
class HttpAudit:
    """Writes one :class:`AuditRecord` per HTTP-level refusal."""

    log: AuditSink

    async def refused(
        self,
        scope: Scope,
        status: int,
        outcome: str,
        *,
        catalog: str = "",
        principal: str | None = None,
        started: float | None = None,
    ) -> None:
        """Record that the HTTP layer answered ``status`` (``outcome`` is the refusal code).

        A database sink writes in a worker thread: refusals cost no credential, so a
        flood of them must not hold the event loop on one insert each.
        """
        elapsed = 0.0 if started is None else (time.perf_counter() - started) * 1000.0
        path = str(scope.get("path", ""))[:MAX_AUDIT_PATH]
        await write_record(
            self.log,
            AuditRecord(
                time=utc_now(),
                catalog=catalog,
                principal=principal,
                proxy_tool=str(scope.get("method", "")),
                server=None,
                tool=None,
                duration_ms=round(elapsed, 3),
                outcome=outcome,
                arguments=None,
                http_status=status,
                path=path,
            ),
        )

    def watching(
        self, scope: Scope, send: Send, *, catalog: str, principal: str | None, started: float
    ) -> Send:
        """``send``, auditing the response if the SDK itself refuses the request (4xx/5xx).

        Only the first response start counts: the SDK can try a second one (a
        500) after a client went away mid-response, which is no refusal.
        """
        seen = False

        async def watched(message: Message) -> None:
            nonlocal seen
            if message["type"] == "http.response.start" and not seen:
                seen = True
                status = int(message["status"])
                if status >= 400:
                    outcome = SDK_REFUSALS.get(status, f"http_{status}")
                    await self.refused(
                        scope,
                        status,
                        outcome,
                        catalog=catalog,
                        principal=principal,
                        started=started,
                    )
            await send(message)

        return watched
