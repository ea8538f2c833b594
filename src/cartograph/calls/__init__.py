"""One proxy tool call, from its first check to its audit record.

The contract: a :class:`CallRequest` is one call as it arrived; :func:`run_call`
runs it at a mount through :data:`STEPS` (authorize, resolve, then for a tool
call the audit admission, policy, server, card integrity, drift and argument
checks, the gateway, the result limits, the repair note) and writes its one
audit record, returning the :class:`Call` and the answer.
:func:`validate_arguments` refuses arguments that do not match a tool's
attested input schema before any upstream I/O (P-TOOL-1).
"""

from cartograph.calls.arguments import validate_arguments
from cartograph.calls.pipeline import STEPS, run_call
from cartograph.calls.request import Call, CallRequest

__all__ = ["STEPS", "Call", "CallRequest", "run_call", "validate_arguments"]
