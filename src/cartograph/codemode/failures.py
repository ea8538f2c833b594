"""What went wrong in a run, as a :class:`~cartograph.errors.CodeError` with a stable code.

Monty reports a failed program as a ``MontyRuntimeError`` whose inner exception is
an ordinary Python one; which of those were the sandbox saying *no* (a limit, a
missing module, a host-only builtin) is told apart here, by exception type and
Monty 1.4's wording (``tests/codemode`` pins each case, so an upgrade that
rewords one fails there, not in production):

* a limit: ``TimeoutError`` "... time limit exceeded" / "sleep limit exceeded",
  ``MemoryError`` "memory limit exceeded", ``RecursionError``, ``RuntimeError``
  "suspension limit ... exceeded" (a host round-trip budget, set from max_calls);
* the host, refused (``code_forbidden``): ``PermissionError`` "Permission denied"
  from the empty filesystem, ``ImportError`` "No module named" for a module Monty
  does not offer, ``NameError``
  for a host-only builtin (``__import__``, ``globals``, ``compile``, ``open``'s
  siblings), ``AttributeError`` for a dunder or for ``os``/``sys`` internals,
  ``RuntimeError`` "... is not supported in this environment" (``os.environ``);
* Python the sandbox lacks (``code_unsupported``): ``NotImplementedError``
  "... does not yet support ...";
* an inner call's own refusal, raised into the program as ``[code] message``
  (:mod:`cartograph.codemode.bridge`) and not caught there: that code (only a
  message the bridge raised counts, so a program cannot forge one);
* anything else the program raised: ``code_error``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from cartograph import error_codes as codes
from cartograph.errors import CodeError

if TYPE_CHECKING:
    from pydantic_monty import MontyError

HOST_ONLY_BUILTINS: Final = frozenset(
    {
        "__import__",
        "__builtins__",
        "breakpoint",
        "compile",
        "dir",
        "exit",
        "globals",
        "help",
        "input",
        "memoryview",
        "quit",
        "vars",
    }
)
_NAME: Final = re.compile(r"name '([^']+)' is not defined")
_HOST_ATTRIBUTE: Final = re.compile(r"attribute '__\w+__'|^module '(os|sys)' has no attribute")
_MAX_MESSAGE: Final = 2000


def classify(error: MontyError, relayed: Mapping[str, str]) -> CodeError:
    """The coded error for one failed feed, with the program's line and column when known.

    ``relayed`` maps each message the bridge raised into the program to its code.
    """
    from cartograph.codemode._monty import monty

    if isinstance(error, monty.MontySyntaxError):
        return _coded(codes.CODE_SYNTAX, f"SyntaxError: {error}", _position(error))
    if isinstance(error, monty.MontyCrashedError):
        if error.timed_out:
            return CodeError("the sandbox worker stopped answering", code=codes.CODE_TIMEOUT)
        return CodeError(
            f"the sandbox worker died mid-run ({error}); it is replaced, run again",
            code=codes.CODE_CRASHED,
        )
    if isinstance(error, monty.MontyRuntimeError):
        inner = error.exception()
        message = error.display(format="type-msg")
        return _coded(code_of(inner, str(inner), relayed), message, _position(error))
    return CodeError(f"the sandbox refused the run: {error}", code=codes.CODE_ERROR)


def code_of(inner: BaseException, text: str, relayed: Mapping[str, str]) -> str:
    """The code for an exception the program did not catch (see the module docstring)."""
    if text in relayed:
        return relayed[text]
    for kinds, test, code in _RULES:
        if isinstance(inner, kinds) and test(text):
            return code
    return codes.CODE_ERROR


def _always(_: str) -> bool:
    return True


def _host_name(text: str) -> bool:
    found = _NAME.search(text)
    return found is not None and found.group(1) in HOST_ONLY_BUILTINS


_Rule = tuple[type[BaseException], Callable[[str], bool], str]
_RULES: Final[tuple[_Rule, ...]] = (
    (TimeoutError, lambda t: "limit exceeded" in t, codes.CODE_TIMEOUT),
    (MemoryError, lambda t: "memory limit exceeded" in t, codes.CODE_MEMORY_LIMIT),
    (RecursionError, _always, codes.CODE_RECURSION_LIMIT),
    (RuntimeError, lambda t: t.startswith("suspension limit"), codes.CODE_CALL_LIMIT),
    (RuntimeError, lambda t: "is not supported in this environment" in t, codes.CODE_FORBIDDEN),
    (NotImplementedError, lambda t: "does not yet support" in t, codes.CODE_UNSUPPORTED),
    (PermissionError, lambda t: t.startswith("Permission denied"), codes.CODE_FORBIDDEN),
    (
        ImportError,
        lambda t: t.startswith(("No module named", "cannot import")),
        codes.CODE_FORBIDDEN,
    ),
    (NameError, _host_name, codes.CODE_FORBIDDEN),
    (AttributeError, lambda t: _HOST_ATTRIBUTE.search(t) is not None, codes.CODE_FORBIDDEN),
)


def _position(error: Any) -> dict[str, Any]:
    """Line and column of the innermost frame of the program (1-based), when Monty gave one."""
    frames = error.traceback()
    if not frames:
        return {}
    frame = frames[-1]
    where: dict[str, Any] = {"line": frame.line, "column": frame.column}
    if frame.function_name:
        where["function"] = frame.function_name
    return where


def _coded(code: str, message: str, where: dict[str, Any]) -> CodeError:
    text = message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 1] + "…"
    if "line" in where:
        text += f" (line {where['line']}, column {where['column']})"
    return CodeError(f"{text}{_HINTS.get(code, '')}", code=code, **where)


_HINTS: Final = {
    codes.CODE_FORBIDDEN: "; the sandbox has no files, environment, network or host modules",
    codes.CODE_UNSUPPORTED: "; rewrite without it (docs/code-mode.md lists what Monty supports)",
    codes.CODE_TIMEOUT: "; do less per run, or ask the operator for a longer [code_mode] wall_time",
}
