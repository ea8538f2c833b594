"""Upstream calls: pooled or one-shot sessions, limits, argument checks, audit.

The contract: ``await Gateway.call(server, tool, arguments, ...)`` returns the
upstream ``CallToolResult`` (size-limited, secrets redacted) or raises an
``UpstreamError``; :func:`validate_arguments` refuses bad arguments before any
upstream I/O; every call is written to the :class:`AuditLog`.
"""

from cartograph.gateway.arguments import validate_arguments
from cartograph.gateway.audit import AuditLog, Redactor
from cartograph.gateway.gateway import Gateway

__all__ = ["AuditLog", "Gateway", "Redactor", "validate_arguments"]
