"""Code mode: an agent's program runs in the Monty sandbox with the federation's tools as functions.

Instead of one model round trip per tool call, the agent sends one program to
the ``run`` proxy tool; the program calls tools as async functions and only what
it prints or returns comes back. The package holds the sandbox (a pool of Monty
worker processes and the run's limits, :mod:`.sandbox`), the coded failures
(:mod:`.failures`), the tools-as-functions bridge (:mod:`.bridge`: every inner
call goes through the proxy's own call entry, which the server hands in as a
:class:`Federation`), and one run from request to report (:mod:`.run`).
``docs/code-mode.md`` states what Monty supports and the threat model.
"""

from cartograph.codemode.bridge import Federation, SandboxTool
from cartograph.codemode.run import RunId, RunReport, check_request, run_program
from cartograph.codemode.sandbox import Sandbox

__all__ = [
    "Federation",
    "RunId",
    "RunReport",
    "Sandbox",
    "SandboxTool",
    "check_request",
    "run_program",
]
