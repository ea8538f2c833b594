"""Upstream calls: pooled or one-shot sessions, limits, audit.

The contract: ``await Gateway.call(server, tool, arguments, ...)`` returns the
upstream ``CallToolResult`` under a breaker, a bulkhead and a deadline, or
raises an ``UpstreamError``; every call is written to the :class:`AuditLog`.
The checks before a call reaches the gateway, and the result's limits after,
are :mod:`cartograph.calls`.
"""

from cartograph.gateway.audit import AuditLog, Redactor
from cartograph.gateway.gateway import Gateway

__all__ = ["AuditLog", "Gateway", "Redactor"]
