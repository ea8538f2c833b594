"""One proxy tool call, from its first check to its audit record.

The contract: :func:`validate_arguments` refuses arguments that do not match
a tool's attested input schema before any upstream I/O (P-TOOL-1).
"""

from cartograph.calls.arguments import validate_arguments

__all__ = ["validate_arguments"]
