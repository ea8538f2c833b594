"""The demo agent reads each discovered tool's line from discover's text content."""

from __future__ import annotations

from cartograph.demo.agent import tool_lines
from cartograph.index.discover import DiscoveredTool, DiscoverResult, ToolProvenance
from cartograph.server.discover_reply import discover_text

PROVENANCE = ToolProvenance(
    card_version=1, key_id="k", generator="template", generator_version="1", verified=True
)


def _tool(
    server: str, tool: str, description: str, properties: dict[str, object]
) -> DiscoveredTool:
    schema = {"type": "object", "properties": properties, "required": list(properties)[:1]}
    return DiscoveredTool(
        server=server,
        tool=tool,
        description=description,
        input_schema=schema,
        example={},
        score=0.5,
        provenance=PROVENANCE,
    )


def test_each_tool_gets_its_own_line_even_when_two_servers_share_a_tool_name() -> None:
    found = DiscoverResult(
        task="t",
        method="hybrid",
        confidence=0.9,
        tools=[
            _tool("time", "now", "Current time in a zone.", {"zone": {"type": "string"}}),
            _tool("clock", "now", "Wall clock (local): ticks.", {"fmt": {"type": "string"}}),
            _tool("clock", "now_utc", "UTC\u2028time \x85 exactly.", {}),
        ],
    )
    pairs = [(t.server, t.tool) for t in found.tools]
    lines = tool_lines(discover_text(found), [*pairs, ("time", "missing")])
    assert sorted(lines) == sorted(pairs)  # a tool without a line is left out, not invented
    assert lines[("time", "now")].startswith("now(zone*: string)")
    assert "Current time" in lines[("time", "now")]
    assert lines[("clock", "now")].startswith("now(fmt*: string)")
    assert "Wall clock" in lines[("clock", "now")]
    assert lines[("clock", "now_utc")] == "now_utc(): UTC\u2028time \x85 exactly"  # one line
