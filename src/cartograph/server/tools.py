"""The three proxy tools as an agent sees them: short, exact, and measured.

These descriptions are the proxy's whole fixed cost in the agent's context
(the paper's were 169 cl100k tokens for all three); `test_proxy_tools`
pins the budget.
"""

from __future__ import annotations

from typing import Any, Final

from mcp.types import Tool

DISCOVER: Final = "discover"
STATUS: Final = "status"
CALL: Final = "call"
PROXY_TOOLS: Final = (DISCOVER, STATUS, CALL)
MAX_K: Final = 20

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
}


def proxy_tool(name: str, *, prefix: str | None = None) -> Tool:
    """The MCP descriptor of proxy tool ``name``, optionally prefixed for flat namespaces."""
    body = _DEFINITIONS[name]
    return Tool(
        name=f"{prefix or ''}{name}",
        description=body["description"],
        input_schema=body["inputSchema"],
    )
