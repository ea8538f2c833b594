"""What a catalog does with a secret the scan finds in a call (docs/gateway.md, Secrets).

``[catalogs.policy.secrets]``: ``arguments = "block"`` refuses a call, resource
read or prompt whose arguments carry one (``secret_in_arguments``) before any
upstream I/O; ``results = "redact"`` replaces each one in what comes back with a
marker naming its class. ``"audit"`` in either lets the data through and the
audit record names the classes seen, never a value. Both default to the safe
side, as the Docker MCP gateway does.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

ArgumentsAction = Literal["block", "audit"]
ResultsAction = Literal["redact", "audit"]

DEFAULT_ARGUMENTS_ACTION: Final[ArgumentsAction] = "block"
DEFAULT_RESULTS_ACTION: Final[ResultsAction] = "redact"


class SecretPolicy(BaseModel):
    """One catalog's answer to a secret in arguments and in results."""

    # As every config section: unknown keys refused, inputs never echoed in errors.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    arguments: ArgumentsAction = DEFAULT_ARGUMENTS_ACTION
    results: ResultsAction = DEFAULT_RESULTS_ACTION
