"""Codes of code mode: the ``run`` tool and ``cartograph run``.

docs/errors.md, "Code mode"; docs/code-mode.md.
"""

from __future__ import annotations

from typing import Final

from cartograph.error_codes._registry import _code

# --- code mode: the run tool and `cartograph run` ([code_mode]; docs/code-mode.md) -------
CODE_ERROR: Final = _code(
    "code_error", "a code-mode program raised an exception (type, message, line and column shown)"
)
CODE_SYNTAX: Final = _code("code_syntax", "a code-mode program is not valid Python")
CODE_UNSUPPORTED: Final = _code(
    "code_unsupported",
    "a code-mode program uses Python the sandbox lacks (class inheritance, yield)",
)
CODE_FORBIDDEN: Final = _code(
    "code_forbidden",
    "a code-mode program reached for the host: files, environment, imports, dunders",
)
CODE_TIMEOUT: Final = _code(
    "code_timeout", "a code-mode run took longer than [code_mode] wall_time"
)
CODE_MEMORY_LIMIT: Final = _code(
    "code_memory_limit", "a code-mode program allocated more than [code_mode] max_memory"
)
CODE_RECURSION_LIMIT: Final = _code(
    "code_recursion_limit",
    "a code-mode program recursed deeper than [code_mode] max_recursion_depth",
)
CODE_CALL_LIMIT: Final = _code(
    "code_call_limit", "a code-mode run made more inner calls than [code_mode] max_calls"
)
CODE_OUTPUT_TOO_LARGE: Final = _code(
    "code_output_too_large", "a code-mode run's value is over [code_mode] max_output_bytes"
)
CODE_TOO_LONG: Final = _code(
    "code_too_long", "a code-mode program is longer than [code_mode] max_code_chars"
)
CODE_BAD_INPUTS: Final = _code(
    "code_bad_inputs", "run's code is not a non-empty string, or its inputs not a JSON object"
)
CODE_WRITE_DENIED: Final = _code(
    "code_write_denied",
    "code called a tool not marked read-only and not in [code_mode] allow_writes",
)
CODE_CRASHED: Final = _code(
    "code_crashed", "the sandbox worker died mid-run; it is replaced and the next run works"
)
CODE_BUSY: Final = _code("code_busy", "no sandbox worker came free within the run's wall time")
CODE_MODE_NOT_INSTALLED: Final = _code(
    "code_mode_not_installed", "code mode is asked for but cartograph[code] is not installed"
)
