"""The federation's tools as the sandbox's async functions, each call through the proxy's entry.

A program sees each server it may use as a global (``notes``) whose methods are
the server's tools (``await notes.read_note(name="a")``), spelled as in the
generated stubs (:mod:`cartograph.stubs.shapes`); ``call(server, tool,
arguments)`` reaches any tool by its upstream names, and ``discover(task, k)``
answers as the ``discover`` tool does. None of them does I/O of its own: each
goes to the :class:`Federation` the server hands in, which is the proxy's one
call entry (validation, policy, drift, breaker, bulkhead, deadline and one audit
record per inner call, exactly as for the ``call`` tool).

Before that entry the bridge adds what only a program needs:

* the **call cap**: at most ``max_calls`` inner calls (refused ones count), and
  past it every call raises and the run ends ``code_call_limit``;
* the **write gate**: a tool whose definition does not say ``readOnlyHint: true``
  is refused (``code_write_denied``) unless ``allow_writes`` names it; a server
  still connecting has no live definition yet, so its global and ``call`` to it
  raise ``starting`` naming it (the ``run`` tool first waits, bounded, for them);
* **concurrency**: at most ``max_parallel_calls`` of the run's calls in flight;
* **structure**: each call runs as a child of the run, so the run's end (or its
  deadline) cancels any call the program left running.

A refused or failed call raises in the program as ``[code] message``
(``PermissionError`` for policy refusals, ``LookupError`` for unknown or withheld
tools, ``ValueError`` for bad arguments, ``RuntimeError`` otherwise); uncaught,
it ends the run with that code.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

import anyio
from anyio.abc import TaskGroup
from mcp.types import CallToolResult, TextContent

from cartograph import error_codes as codes
from cartograph.codemode.values import value_of_result
from cartograph.config.model import CodeModeConfig
from cartograph.gateway.results import error_code
from cartograph.stubs.shapes import ToolShape

_T = TypeVar("_T")
OK: Final = "ok"
TOOL_ERROR: Final = "tool_error"
_MAX_ERROR_TEXT: Final = 2000

_RAISED_AS: Final[dict[str, type[Exception]]] = {
    codes.TOOL_DENIED: PermissionError,
    codes.POLICY_DENIED: PermissionError,
    codes.CATALOG_FORBIDDEN: PermissionError,
    codes.UNAUTHENTICATED: PermissionError,
    codes.CODE_WRITE_DENIED: PermissionError,
    codes.UNKNOWN_TOOL: LookupError,
    codes.UNKNOWN_SERVER: LookupError,
    codes.TOOL_NOT_EXPOSED: LookupError,
    codes.DRIFT: LookupError,
    codes.TOOL_DRIFTED: LookupError,
    codes.TOOL_UNATTESTED: LookupError,
    codes.TOOL_MISSING: LookupError,
    codes.BAD_ARGUMENTS: ValueError,
    codes.BAD_META_CALL: ValueError,
}


@dataclass(frozen=True)
class SandboxTool:
    """One tool a program may call: where it lives upstream and how the sandbox spells it."""

    server: str
    tool: str
    module: str
    shape: ToolShape
    read_only: bool

    @property
    def signature(self) -> str:
        """``await notes.read_note(name: str) -> T``, as a model writes the call."""
        return "await " + self.shape.signature(f"{self.module}.")


class Federation(Protocol):
    """What a run can reach: the proxy's own call entry, for one principal, nothing else."""

    def tools(self) -> Sequence[SandboxTool]:
        """The tools the caller may call now (verified, not drifted, allowed by policy)."""
        ...

    def read_only(self, server: str, tool: str) -> bool | None:
        """Whether the live definition says ``readOnlyHint: true``; None: no such tool listed."""
        ...

    def connecting(self) -> Mapping[str, str]:
        """Each server the caller could use that is still connecting: its global's name → server.

        Its tools are not listed yet, so none is offered: whether one is
        read-only is only known from the live listing.
        """
        ...

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """One ``call`` through the proxy's entry, exactly as the ``call`` tool makes it."""
        ...

    async def discover(self, task: str, k: int | None) -> CallToolResult:
        """One ``discover`` through the proxy's entry."""
        ...


@dataclass(frozen=True)
class CallLine:
    """One inner call as the run reports it: ``notes/read_note ok 12 ms``."""

    target: str
    outcome: str
    ms: float

    def render(self) -> str:
        return f"{self.target} {self.outcome} {self.ms:.0f} ms"


class Bridge:
    """One run's side of the federation (see the module docstring)."""

    def __init__(self, federation: Federation, settings: CodeModeConfig, group: TaskGroup) -> None:
        self.federation = federation
        self.settings = settings
        self.group = group
        self.calls: list[CallLine] = []
        self.relayed: dict[str, str] = {}
        """Each refusal message raised into the program, mapped to its code."""
        self.limit_hit = False
        self._attempts = 0
        self._slots = anyio.Semaphore(settings.max_parallel_calls)
        self._modules: dict[str, dict[str, SandboxTool]] = {}
        for tool in federation.tools():
            self._modules.setdefault(tool.module, {})[tool.shape.function] = tool
        self._connecting = {
            module: server
            for module, server in federation.connecting().items()
            if module not in self._modules
        }

    def globals(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The program's globals: ``inputs`` and one namespace per server it may use."""
        from cartograph.codemode._monty import namespace

        bound: dict[str, Any] = {"inputs": dict(inputs)}
        for module, functions in self._modules.items():
            bound[module] = namespace(module, frozenset(functions), self._method(module))
        for module, server in self._connecting.items():

            def refusal(function: str, server: str = server) -> Exception:
                return self._still_connecting(server, function)

            bound[module] = namespace(module, frozenset(), self._method(module), refusal)
        return bound

    def functions(self) -> dict[str, Any]:
        """The host functions a program calls by bare name."""
        return {"call": self.call, "discover": self.discover}

    def _method(self, module: str) -> Callable[[str, tuple[Any, ...], dict[str, Any]], Any]:
        def method(function: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            tool = self._modules[module][function]
            return self._invoke(tool.server, tool.tool, bind_arguments(tool, args, kwargs))

        return method

    async def call(self, server: Any, tool: Any, arguments: Any = None) -> Any:
        """``call(server, tool, arguments)``: any tool by its upstream names."""
        if not isinstance(server, str) or not isinstance(tool, str):
            raise TypeError("call(server, tool, arguments): server and tool are strings")
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError("call(server, tool, arguments): arguments is a dict")
        return await self._invoke(server, tool, dict(arguments or {}))

    async def discover(self, task: Any, k: Any = None) -> Any:
        """``discover(task, k)``: the ``discover`` tool's structured answer."""
        self._count("discover")
        started = time.perf_counter()
        result = await self._child(lambda: self.federation.discover(str(task), k))
        return self._answer("discover", result, started)

    async def _invoke(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        target = f"{server}/{tool}"
        self._count(target)
        if server in self._connecting.values():
            raise self._still_connecting(server, tool)
        self._gate(server, tool)
        started = time.perf_counter()
        async with self._slots:
            result = await self._child(lambda: self.federation.call(server, tool, arguments))
        return self._answer(target, result, started)

    def _count(self, target: str) -> None:
        self._attempts += 1
        if self._attempts > self.settings.max_calls:
            self.limit_hit = True
            self.calls.append(CallLine(target, codes.CODE_CALL_LIMIT, 0.0))
            raise self._refusal(
                codes.CODE_CALL_LIMIT,
                f"this run may make {self.settings.max_calls} inner calls ([code_mode] "
                "max_calls); do the rest in another run",
            )

    def _gate(self, server: str, tool: str) -> None:
        """The write gate: only read-only tools, or ones the operator allowed, run from code."""
        if self.federation.read_only(server, tool) is not False:
            return  # read-only, or unknown here: the call entry refuses the latter itself
        name = f"{server}/{tool}"
        if write_allowed(self.settings, server, tool):
            return
        self.calls.append(CallLine(name, codes.CODE_WRITE_DENIED, 0.0))
        raise self._refusal(
            codes.CODE_WRITE_DENIED,
            f"{name} is not marked read-only, so code may not call it unless the operator "
            'allows it ([code_mode] allow_writes = ["server/tool"]); call it with the call tool',
        )

    def _still_connecting(self, server: str, tool: str) -> Exception:
        """A server not listed yet: its tools' write flags are unknown, so none is called."""
        self.calls.append(CallLine(f"{server}/{tool}", codes.STARTING, 0.0))
        return self._refusal(
            codes.STARTING,
            f"{server} is still connecting (cartograph started moments ago), so its tools "
            "are not listed yet and code may not call them; run the program again in a moment",
        )

    async def _child(self, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``work`` as a child of the run's task group and wait for it."""
        done = anyio.Event()
        box: list[_T] = []
        failure: list[Exception] = []

        async def child() -> None:
            try:
                box.append(await work())
            except Exception as exc:  # handed to the waiting program, not the run's group
                failure.append(exc)
            finally:
                done.set()

        self.group.start_soon(child)
        await done.wait()
        if failure:
            raise failure[0]
        if not box:  # cancelled: the run is ending
            raise RuntimeError("the run ended before this call finished")
        return box[0]

    def _answer(self, target: str, result: CallToolResult, started: float) -> Any:
        ms = (time.perf_counter() - started) * 1000.0
        code = error_code(result)
        outcome = code or (TOOL_ERROR if result.is_error else OK)
        self.calls.append(CallLine(target, outcome, ms))
        if result.is_error:
            raise self._refusal(outcome, _error_text(result))
        return value_of_result(result)

    def _refusal(self, code: str, message: str) -> Exception:
        text = f"[{code}] {message}"
        self.relayed[text] = code
        return _RAISED_AS.get(code, RuntimeError)(text)


def write_allowed(settings: CodeModeConfig, server: str, tool: str) -> bool:
    """Whether ``[code_mode] allow_writes`` names ``server/tool`` (globs, as policies match)."""
    name = f"{server}/{tool}"
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in settings.allow_writes)


def bind_arguments(
    tool: SandboxTool, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The upstream arguments for a call written with the sandbox's parameter names."""
    params = tool.shape.params
    if params is None:  # the tool takes any keyword arguments, sent as they are
        if args:
            raise TypeError(f"{tool.module}.{tool.shape.function}() takes keyword arguments only")
        return dict(kwargs)
    positional = [p for p in params if p.required]
    if len(args) > len(positional):
        raise TypeError(
            f"{tool.module}.{tool.shape.function}() takes {len(positional)} positional "
            f"arguments but {len(args)} were given"
        )
    by_name = {p.name: p for p in params}
    bound = {p.key: value for p, value in zip(positional, args, strict=False)}
    for name, value in kwargs.items():
        param = by_name.get(name)
        if param is None:
            raise TypeError(
                f"{tool.module}.{tool.shape.function}() got an unexpected keyword argument "
                f"{name!r}; it takes {', '.join(by_name) or 'none'}"
            )
        if param.key in bound:
            raise TypeError(f"{tool.module}.{tool.shape.function}() got {name!r} twice")
        if value is not None or param.required:  # None: leave the optional argument out
            bound[param.key] = value
    return bound


def _error_text(result: CallToolResult) -> str:
    structured = result.structured_content
    if isinstance(structured, dict) and isinstance(structured.get("error"), dict):
        message = structured["error"].get("message")
        if isinstance(message, str):
            return message[:_MAX_ERROR_TEXT]
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    return (text or "the tool reported an error")[:_MAX_ERROR_TEXT]
