"""The proxy tools as an agent sees them: short, exact, and measured.

The three tools' descriptions are the proxy's whole fixed cost in the agent's
context (the paper's were 169 cl100k tokens for all three); `test_proxy_tools`
pins the budget. The fourth, ``run`` (code mode, ``[code_mode]``), is listed
only where a catalog turns it on; its description states what the sandbox
runs, as measured against the pinned Monty release (tests/codemode/test_language.py).
"""

from __future__ import annotations

from typing import Any, Final

from mcp.types import Tool

DISCOVER: Final = "discover"
STATUS: Final = "status"
CALL: Final = "call"
RUN: Final = "run"
PROXY_TOOLS: Final = (DISCOVER, STATUS, CALL)
"""The tools a catalog's ``policy.proxy_tools`` chooses from."""
ALL_PROXY_TOOLS: Final = (*PROXY_TOOLS, RUN)
"""Every proxy tool, ``run`` included (listed only where ``[code_mode] enabled``)."""
MAX_K: Final = 20

RUN_DESCRIPTION: Final = (
    "Run a Python program in a sandbox instead of many calls; only what it prints and its "
    "last expression's value (JSON) come back. Each tool is an async function named as "
    "discover shows it: `await server.tool(arg=...)`; also `await call(server, tool, "
    "{...})` and `await discover(task, k)`; `inputs` holds your inputs. A refused call "
    "raises (PermissionError, LookupError, ValueError, RuntimeError: '[code] message'). "
    "Supported: functions, lambdas, closures, f-strings, comprehensions, classes without "
    "inheritance, dataclasses, try/except, match, async/await, asyncio.gather; modules "
    "json re math datetime collections itertools functools random time asyncio typing "
    "dataclasses decimal csv base64 hashlib copy bisect. Not supported: class inheritance, "
    "yield, del, async with/for, @property/@staticmethod, other modules, files, network."
)

_DEFINITIONS: Final[dict[str, dict[str, Any]]] = {
    DISCOVER: {
        "description": "Find tools for a task. Returns the top k with server, tool, "
        "description, input schema and an example call.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "task": {"type": "string"},
                "k": {"type": "integer", "description": "1-20, default 5"},
            },
            "required": ["task"],
        },
    },
    STATUS: {
        "description": "Totals and problems: servers down, drifted or unattested tools.",
        "inputSchema": {
            "type": "object",
            "properties": {"detail": {"type": "boolean", "description": "all servers"}},
        },
    },
    CALL: {
        "description": "Call a tool found by discover; returns its result unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "server": {"type": "string"},
                "tool": {"type": "string"},
                "arguments": {"type": "object"},
            },
            "required": ["server", "tool", "arguments"],
        },
    },
    RUN: {
        "description": RUN_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Python source"},
                "inputs": {"type": "object", "description": "JSON the program reads as inputs"},
            },
            "required": ["code"],
        },
    },
}


def exposed_tools(proxy_tools: tuple[str, ...], *, code_mode: bool) -> tuple[str, ...]:
    """The proxy tools a mount lists: the policy's choice, then ``run`` where code mode is on."""
    chosen = tuple(t for t in PROXY_TOOLS if t in proxy_tools)
    return (*chosen, RUN) if code_mode else chosen


def proxy_tool(name: str, *, prefix: str | None = None) -> Tool:
    """The MCP descriptor of proxy tool ``name``, optionally prefixed for flat namespaces."""
    body = _DEFINITIONS[name]
    return Tool(
        name=f"{prefix or ''}{name}",
        description=body["description"],
        input_schema=body["inputSchema"],
    )
