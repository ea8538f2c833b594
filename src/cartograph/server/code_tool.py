"""The ``run`` proxy tool of one catalog: code mode's sandbox on the mount's own call entry.

:class:`CodeTool` holds the catalog's sandbox and ``[code_mode]`` settings and
answers ``run``. The program's federation (:class:`MountFederation`) is made of
this mount and nothing else: each tool function and ``call(...)`` is one
``call`` of the proxy tool through the mount's pipeline entry
(:meth:`ProxyHandlers.run_call`), and ``discover(...)`` one ``discover``, made as
the run's caller (principal and downstream client) with the run's
``traceparent``, so every inner call gets the same authorization, validation,
policy, drift refusal, gateway and audit record as if the agent had sent it,
and every record names the run.

Which tools a program sees: those with a verified card whose live definition
still matches it (not drifted) and that the catalog's policy allows; a catalog
that does not expose ``call`` gives the program none. Right after start-up a
run first waits (bounded, once) for the servers still connecting; one still
connecting after that is bound to a global that refuses by name.
"""

from __future__ import annotations

import builtins
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

from mcp.types import CallToolResult, TextContent

from cartograph.calls.request import CallRequest
from cartograph.cards.model import Card
from cartograph.codemode import Federation, RunId, Sandbox, SandboxTool, check_request, run_program
from cartograph.codemode.bridge import write_allowed
from cartograph.config.model import CatalogPolicy, CodeModeConfig
from cartograph.index.serving import policy_allows
from cartograph.server.content_handlers import FIRST_LIST_WAIT
from cartograph.server.tools import CALL, DISCOVER, RUN
from cartograph.stubs.naming import Namespace, module_name
from cartograph.stubs.shapes import ToolShape, tool_shapes

if TYPE_CHECKING:
    from cartograph.index.discover import DiscoverResult
    from cartograph.server.runtime.catalog import CatalogRuntime


class CodeMount(Protocol):
    """What ``run`` needs of the mount it serves (:class:`ProxyHandlers` is one).

    A protocol, not the handlers' class: the handlers hold a :class:`CodeTool`,
    so naming them here would make the two modules import each other.
    """

    runtime: CatalogRuntime
    catalog: str
    policy: CatalogPolicy
    tool_prefix: str | None

    @property
    def exposed(self) -> tuple[str, ...]: ...

    async def run_call(self, request: CallRequest) -> CallToolResult: ...


SANDBOX_GLOBALS: Final = frozenset({"inputs", "call", "discover", "asyncio"})
"""Names a server's namespace may not take: the program's own globals, and every builtin."""
READ_ONLY_HINT: Final = "readOnlyHint"
CONNECT_WAIT: Final = FIRST_LIST_WAIT
"""Seconds a run right after start-up waits for the servers still connecting (once, as
the first resources/prompts listing does); a server still connecting after it is refused
by name in the program."""


class CodeTool:
    """``run`` for one catalog (see the module docstring)."""

    def __init__(self, handlers: CodeMount, settings: CodeModeConfig) -> None:
        self.handlers = handlers
        self.settings = settings
        self.sandbox = sandbox_for(handlers.runtime, settings.workers)
        self._shapes: dict[tuple[str, int], dict[str, ToolShape]] = {}

    async def run(self, request: CallRequest) -> CallToolResult:
        """Run the program ``request`` carries; the reply is the :class:`RunReport`'s.

        A malformed request raises :class:`~cartograph.errors.CodeError`; a run
        that fails is an error result carrying the failure's code. The run is
        named by the request's ``traceparent`` (the mount mints one for a ``run``
        that came without).
        """
        arguments = request.arguments or {}
        code = arguments.get("code")
        inputs = check_request(code, arguments.get("inputs"), self.settings)
        # a program's functions come from live listings: let those still connecting arrive
        await self.handlers.runtime.settled(CONNECT_WAIT)
        run = RunId.of(request.trace)
        federation = MountFederation(self, request, run)
        report = await run_program(
            self.sandbox, federation, self.settings, str(code), inputs, run=run
        )
        return report.result()

    def modules(self) -> dict[str, str]:
        """Each carded server's name in the sandbox (``notes``), claimed in server-name order."""
        names = Namespace({*dir(builtins), *SANDBOX_GLOBALS})
        return {
            server: names.claim(module_name(server))
            for server in sorted(self.handlers.runtime.cards)
        }

    def read_only(self, server: str, tool: str) -> bool | None:
        """Whether the live definition (pinned by the card) says ``readOnlyHint: true``."""
        runtime = self.handlers.runtime
        card, live = runtime.cards.get(server), runtime.live.get(server)
        entry = card.body.tool(tool) if card is not None else None
        upstream = entry.upstream_name if entry is not None else tool  # a renamed tool
        found = live.tool(upstream) if live is not None else None
        if found is None:
            return None
        return (found.annotations or {}).get(READ_ONLY_HINT) is True

    def taught(self, result: CallToolResult, found: DiscoverResult) -> CallToolResult:
        """``discover``'s reply plus each tool's call as a ``run`` program writes it.

        One line per tool after the usual text, and ``code`` beside each entry
        of ``structuredContent.tools``; a tool the write gate would refuse
        says so, so a model does not write a program that cannot run.
        """
        calls = {(t.server, t.tool): self._call_form(t.server, t.tool) for t in found.tools}
        lines = [form for form in calls.values() if form]
        if not lines or not isinstance(result.structured_content, dict):
            return result
        structured = dict(result.structured_content)
        structured["tools"] = [
            {**entry, "code": calls.get((entry["server"], entry["tool"]))}
            for entry in structured.get("tools", [])
        ]
        text = TextContent(text=f"In {RUN} programs:\n" + "\n".join(f"- {line}" for line in lines))
        return result.model_copy(
            update={"content": [*result.content, text], "structured_content": structured}
        )

    def _call_form(self, server: str, tool: str) -> str | None:
        card = self.handlers.runtime.cards.get(server)
        shape = self.shapes(card).get(tool) if card is not None else None
        if shape is None:
            return None
        form = "await " + shape.signature(f"{self.modules()[server]}.")
        if self.read_only(server, tool) is False and not write_allowed(self.settings, server, tool):
            form += "  # not read-only: refused in programs"
        return form

    def shapes(self, card: Card) -> dict[str, ToolShape]:
        """Each tool of ``card`` as the sandbox spells it (cached per card version)."""
        key = (card.server, card.version)
        found = self._shapes.get(key)
        if found is None:
            found = self._shapes[key] = tool_shapes(card)
        return found

    async def aclose(self) -> None:
        """Stop the catalog's sandbox (shared with any twin mount of the same runtime)."""
        await self.sandbox.aclose()


_SANDBOXES: weakref.WeakKeyDictionary[object, Sandbox] = weakref.WeakKeyDictionary()


def sandbox_for(runtime: object, workers: int) -> Sandbox:
    """The one sandbox of a catalog's runtime: its per-catalog and routed mounts share it."""
    found = _SANDBOXES.get(runtime)
    if found is None:
        found = _SANDBOXES[runtime] = Sandbox(workers=workers)
    return found


class MountFederation(Federation):
    """One run's view of the mount: the caller's tools, through the mount's call entry."""

    def __init__(self, tool: CodeTool, request: CallRequest, run: RunId) -> None:
        self.code = tool
        self.handlers = tool.handlers
        self.request = request
        self.run = run

    def tools(self) -> Sequence[SandboxTool]:
        handlers = self.handlers
        if CALL not in handlers.exposed:
            return ()
        cards = handlers.runtime.cards
        found: list[SandboxTool] = []
        for server, module in self.code.modules().items():
            for name, shape in self.code.shapes(cards[server]).items():
                if self._callable(server, name):
                    read_only = self.read_only(server, name) is True
                    found.append(SandboxTool(server, name, module, shape, read_only))
        return found

    def connecting(self) -> Mapping[str, str]:
        """The carded servers not listed yet that the caller may use at least one tool of."""
        handlers = self.handlers
        if CALL not in handlers.exposed:
            return {}
        unchecked = handlers.runtime.unchecked
        cards = handlers.runtime.cards
        return {
            module: server
            for server, module in self.code.modules().items()
            if server in unchecked
            and any(
                policy_allows(handlers.policy, server, t) for t in self.code.shapes(cards[server])
            )
        }

    def _callable(self, server: str, tool: str) -> bool:
        handlers = self.handlers
        entry = handlers.runtime.drift.get(server, tool)
        exposed = entry is not None and entry.exposed
        return exposed and policy_allows(handlers.policy, server, tool)

    def read_only(self, server: str, tool: str) -> bool | None:
        return self.code.read_only(server, tool)

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        meta = {"server": server, "tool": tool, "arguments": arguments}
        return await self._proxy_tool(CALL, meta)

    async def discover(self, task: str, k: int | None) -> CallToolResult:
        asked: dict[str, Any] = {"task": task} if k is None else {"task": task, "k": k}
        return await self._proxy_tool(DISCOVER, asked)

    async def _proxy_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """One proxy tool call as the run's caller, carrying the run's ``traceparent``."""
        handlers = self.handlers
        inner = CallRequest(
            catalog=handlers.catalog,
            principal=self.request.principal,
            name=f"{handlers.tool_prefix or ''}{name}",
            arguments=arguments,
            client=self.request.client,
            trace=self.run.traceparent,
        )
        return await handlers.run_call(inner)
