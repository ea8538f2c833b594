"""The runtime that generated stubs call: validate, send through `call`, unwrap.

Generated code calls :func:`call_tool`, which

1. validates the arguments against the tool's attested input schema with
   jsonschema, raising :class:`~cartograph.errors.ArgumentError` before any
   I/O (the proxy validates again, P-TOOL-1; failing here is cheaper and
   points at the caller's line);
2. sends ``call(server, tool, arguments)`` to a running `cartograph serve`
   over one kept-open SDK session (HTTP or a stdio child, see
   :mod:`cartograph.stubs.targets`);
3. returns a :class:`ToolResult` (structured content when present, checked
   against the output schema), or raises when the tool reports an error.

Stubs are plain synchronous functions, the easiest thing to call from an
agent's script. The session lives on a private event-loop thread, so stubs
also work from code that already runs an event loop. Use :func:`connect` to
point stubs somewhere explicitly; otherwise the environment decides.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import anyio
import jsonschema
from anyio.from_thread import BlockingPortal

from cartograph import error_codes as codes
from cartograph.errors import (
    ArgumentError,
    CallError,
    CartographError,
    ToolFailed,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from cartograph.stubs.targets import (
    HttpTarget,
    StdioTarget,
    Target,
    call_tool_from_env,
    target_from_env,
    timeout_from_env,
)

if TYPE_CHECKING:
    from cartograph.stubs._connection import Connection, RawResult

JSONSchema = dict[str, Any]
Arguments = dict[str, object]
CONNECT_TIMEOUT: Final = 60.0
_MAX_ERRORS_SHOWN: Final = 5

__all__ = [
    "Arguments",
    "JSONSchema",
    "StubClient",
    "ToolResult",
    "call_tool",
    "connect",
    "default_client",
    "schema",
    "use",
    "validate_arguments",
]


@dataclass(frozen=True)
class ToolResult:
    """A tool's result: its content blocks (plain JSON) and structured content."""

    content: tuple[dict[str, Any], ...]
    structured: Any = None

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (most tools answer in text)."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


def schema(text: str) -> JSONSchema:
    """Parse an embedded schema (generated modules keep them as JSON text)."""
    parsed = json.loads(text)
    if not isinstance(parsed, dict):
        raise ValueError("an embedded tool schema must be a JSON object")
    return parsed


_validators: dict[int, tuple[JSONSchema, Any]] = {}
_validators_lock = threading.Lock()


def _validator(tool_schema: JSONSchema) -> Any:
    """A cached validator; schemas are module constants, so identity is a fine key."""
    with _validators_lock:
        cached = _validators.get(id(tool_schema))
        if cached is None or cached[0] is not tool_schema:
            cls = jsonschema.validators.validator_for(
                tool_schema, default=jsonschema.Draft202012Validator
            )
            cached = (tool_schema, cls(tool_schema))
            _validators[id(tool_schema)] = cached
        return cached[1]


def _problems(instance: object, tool_schema: JSONSchema) -> list[str]:
    errors = sorted(
        _validator(tool_schema).iter_errors(instance), key=lambda e: list(e.absolute_path)
    )
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors]


def validate_arguments(
    server: str, tool: str, arguments: Mapping[str, object], input_schema: JSONSchema
) -> None:
    """Raise ``ArgumentError`` (code ``bad_arguments``) when arguments break the schema."""
    problems = _problems(dict(arguments), input_schema)
    if problems:
        shown = "; ".join(problems[:_MAX_ERRORS_SHOWN])
        raise ArgumentError(
            f"arguments for {server}/{tool} do not match its attested input schema: {shown}; "
            "nothing was sent — fix the arguments (see the stub's docstring)",
            server=server,
            tool=tool,
            problems=problems,
        )


def _check_structured(
    server: str, tool: str, result: ToolResult, output_schema: JSONSchema
) -> None:
    if result.structured is None:
        raise UpstreamProtocolError(
            f"{server}/{tool} declares an output schema but returned no structured content",
            code=codes.MISSING_STRUCTURED_CONTENT,
        )
    problems = _problems(result.structured, output_schema)
    if problems:
        raise UpstreamProtocolError(
            f"{server}/{tool} returned structured content that breaks its attested output schema: "
            + "; ".join(problems[:_MAX_ERRORS_SHOWN]),
            code=codes.BAD_STRUCTURED_CONTENT,
        )


def _failure(server: str, tool: str, raw: RawResult) -> CartographError:
    """The error for an ``isError`` result: the proxy's own error class when it names a code.

    The proxy's refusals carry ``{"error": {"code": ..., "message": ...}}`` as
    structured content: they raise the Cartograph error class with that code
    (``CallError`` for codes without a class of their own, e.g.
    ``unknown_server``). An upstream tool's own error is a :class:`ToolFailed`.
    """
    text = "\n".join(str(b.get("text", "")) for b in raw.content if b.get("type") == "text")
    error = raw.structured.get("error") if isinstance(raw.structured, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    message = f"{server}/{tool} failed: {text.strip() or 'the tool reported an error without text'}"
    if isinstance(code, str) and isinstance(error, dict):
        # A refusal or failure reported by the proxy itself: keep its stable code.
        cls = _error_class(code) or CallError
        return cls(str(error.get("message") or message), code=code, server=server, tool=tool)
    return ToolFailed(message, server=server, tool=tool, content=list(raw.content))


def _error_class(code: str) -> type[CartographError] | None:
    pending: list[type[CartographError]] = [CartographError]
    while pending:
        cls = pending.pop()
        if cls.code == code:
            return cls
        pending.extend(cls.__subclasses__())
    return None


class _Session:
    """One connection to `cartograph serve`, owned by a private event-loop thread."""

    def __init__(self, target: Target, call_tool: str, timeout: float) -> None:
        self._target, self._call_tool, self._timeout = target, call_tool, timeout
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._portal: BlockingPortal | None = None
        self._connection: Connection | None = None
        self._thread = threading.Thread(target=self._run, name="cartograph-stubs", daemon=True)
        self._thread.start()
        if not self._ready.wait(CONNECT_TIMEOUT):
            raise UpstreamTimeout(
                f"`cartograph serve` at {target.describe()} did not finish connecting "
                f"within {CONNECT_TIMEOUT}s",
                code=codes.SERVE_TIMEOUT,
            )
        if self._error is not None:
            raise self._error

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self._portal is not None

    def _run(self) -> None:
        try:
            anyio.run(self._main)
        except BaseException as exc:  # reported to the caller that is waiting for the connection
            self._error = _unwrap(exc)
        finally:
            self._portal = None
            self._ready.set()

    async def _main(self) -> None:
        from cartograph.stubs._connection import open_connection

        async with (
            open_connection(
                self._target, call_tool=self._call_tool, timeout=self._timeout
            ) as connection,
            BlockingPortal() as portal,
        ):
            self._connection, self._portal = connection, portal
            self._ready.set()
            await portal.sleep_until_stopped()

    def call(self, server: str, tool: str, arguments: Arguments) -> RawResult:
        portal, connection = self._portal, self._connection
        if portal is None or connection is None:
            raise UpstreamUnavailable(
                "the session to `cartograph serve` is closed", code=codes.SERVE_UNAVAILABLE
            )
        try:
            return portal.call(connection.call, server, tool, arguments)
        except CartographError:
            raise
        except Exception as exc:  # the session died under us: say so, the next call reconnects
            raise UpstreamUnavailable(
                f"lost the session to `cartograph serve` at {self._target.describe()}: "
                f"{_unwrap(exc)!r}",
                code=codes.SERVE_UNAVAILABLE,
            ) from exc

    def close(self) -> None:
        portal = self._portal
        if portal is not None:
            with contextlib.suppress(RuntimeError):  # already stopping
                portal.call(portal.stop)
        self._thread.join(CONNECT_TIMEOUT)


def _unwrap(exc: BaseException) -> BaseException:
    """The first Cartograph error (or first leaf) inside task-group exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        found = next((e for e in exc.exceptions if isinstance(e, CartographError)), None)
        exc = found if found is not None else exc.exceptions[0]
    return exc


class StubClient:
    """A reusable, thread-safe connection to `cartograph serve` for stubs.

    Connects lazily on the first call and reconnects after the session dies.
    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        target: Target | None = None,
        *,
        call_tool: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.target = target if target is not None else target_from_env()
        self.call_tool_name = call_tool or call_tool_from_env()
        self.timeout = timeout if timeout is not None else timeout_from_env()
        self._session: _Session | None = None
        self._lock = threading.Lock()

    def _live_session(self) -> _Session:
        with self._lock:
            if self._session is None or not self._session.alive:
                if self._session is not None:
                    self._session.close()
                self._session = _Session(self.target, self.call_tool_name, self.timeout)
            return self._session

    def call(self, server: str, tool: str, arguments: Mapping[str, object]) -> ToolResult:
        """Send ``call(server, tool, arguments)``; raise if the tool reports an error."""
        raw = self._live_session().call(server, tool, dict(arguments))
        if raw.is_error:
            raise _failure(server, tool, raw)
        return ToolResult(raw.content, raw.structured)

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None

    def __enter__(self) -> StubClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


_default: StubClient | None = None
_default_lock = threading.Lock()


def default_client() -> StubClient:
    """The client stubs use: the one set by :func:`use`/:func:`connect`, else the environment's."""
    global _default
    with _default_lock:
        if _default is None:
            _default = StubClient()
        return _default


def use(client: StubClient | None) -> None:
    """Make ``client`` the one stubs call through (None: back to the environment's)."""
    global _default
    with _default_lock:
        previous, _default = _default, client
    if previous is not None and previous is not client:
        previous.close()


def connect(
    url: str | None = None,
    *,
    token: str | None = None,
    command: tuple[str, ...] | None = None,
    call_tool: str | None = None,
    timeout: float | None = None,
) -> StubClient:
    """Point stubs at `cartograph serve`: an HTTP ``url``, or a stdio ``command``."""
    target: Target | None = None
    if url is not None:
        target = HttpTarget(url, token)
    elif command is not None:
        target = StdioTarget(tuple(command))
    client = StubClient(target, call_tool=call_tool, timeout=timeout)
    use(client)
    return client


def call_tool(
    server: str,
    tool: str,
    arguments: Mapping[str, object],
    input_schema: JSONSchema,
    output_schema: JSONSchema | None = None,
) -> ToolResult:
    """What every generated stub does: validate, call through the proxy, check the result."""
    validate_arguments(server, tool, arguments, input_schema)
    result = default_client().call(server, tool, arguments)
    if output_schema is not None:
        _check_structured(server, tool, result, output_schema)
    return result


@atexit.register
def _close_default() -> None:
    """End the stdio child cleanly at exit rather than leaving it to notice EOF."""
    use(None)
