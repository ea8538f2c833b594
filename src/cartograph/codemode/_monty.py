"""The one module that imports ``pydantic_monty`` (the extra ``cartograph[code]``).

Everything else in :mod:`cartograph.codemode` imports this lazily, so the server,
which imports code mode to dispatch ``run``, starts without the extra installed;
only a run needs it, and without it the run is ``code_mode_not_installed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from cartograph import error_codes as codes
from cartograph.errors import CodeError

try:
    import pydantic_monty as monty
except ImportError as exc:  # pragma: no cover - the dev environment has the extra
    raise CodeError(
        "code mode needs the sandbox: pip install 'cartograph[code]' (pydantic-monty)",
        code=codes.CODE_MODE_NOT_INSTALLED,
    ) from exc

__all__ = ["MethodHandler", "ServerTools", "ToolNamespace", "monty", "namespace"]

MethodHandler = Callable[[str, tuple[Any, ...], dict[str, Any]], Awaitable[Any]]


class ServerTools:
    """What a server's name is bound to in the sandbox: nothing but its tool functions."""

    def __init__(self, module: str) -> None:
        self._module = module

    def __repr__(self) -> str:
        return f"<tools of {self._module}>"


@dataclass
class ToolNamespace(monty.ClassInstance):
    """A server's tools as methods: each call goes to ``handler``, nothing else is reachable.

    No attribute crosses into the sandbox (no eager or lazy attributes), and a
    method call reaches the host only for a name in ``allowed_methods``. With
    ``refusal`` set (a server still connecting), every method call raises what
    it returns instead: the name is bound, so the program learns why, not a
    bare ``NameError``.
    """

    _: KW_ONLY
    handler: MethodHandler = field(repr=False)
    module: str = ""
    refusal: Callable[[str], Exception] | None = field(default=None, repr=False)

    def call_method(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.refusal is not None:
            raise self.refusal(name)
        allowed = self.allowed_methods
        if name == "__call__" or not isinstance(allowed, frozenset) or name not in allowed:
            raise AttributeError(
                f"{self.module} has no tool function {name!r}; its functions are "
                f"{', '.join(sorted(allowed)) if isinstance(allowed, frozenset) else 'none'}"
            )
        return self.handler(name, args, kwargs)


def namespace(
    module: str,
    functions: frozenset[str],
    handler: MethodHandler,
    refusal: Callable[[str], Exception] | None = None,
) -> ToolNamespace:
    """The sandbox value for one server: its ``functions``, each answered by ``handler``.

    ``refusal``: each method call raises ``refusal(name)`` instead (no function is reachable).
    """
    return ToolNamespace(
        ServerTools(module),
        allowed_methods=functions,
        handler=handler,
        module=module,
        refusal=refusal,
    )
