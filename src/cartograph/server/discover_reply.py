"""How a ``discover`` result reads to an agent: one text block and ``structuredContent``.

Retrieval (:mod:`cartograph.index.discover`) decides *which* tools; this
module decides how they are shown on the MCP surface — the compact text an
agent reads and the machine-readable part a client follows up with.
Transformations like this one are snapshot-tested (tests/index/test_discover.py).
"""

from __future__ import annotations

import re
from typing import Any, Final

from cartograph.index.discover import DiscoveredTool, DiscoverResult
from cartograph.index.entries import plain_description
from cartograph.index.schema_compact import schema_signature
from cartograph.index.text import tokenize

_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+")


def discover_text(result: DiscoverResult) -> str:
    """The agent's rendering: under half the tokens of the same tools' raw JSON.

    One line per tool, grouped under its server (servers in the order of
    their best tool): ``- tool(signature): gist``. The signature is
    lossless for arguments (names, ``*`` = required, types, enums,
    defaults, constraints, descriptions; ``schema_signature``); the gist is
    the description's first informative clause, without sentences that
    only restate names. A tool whose name another server's tool also has
    ends its line with :func:`_name_note` (P-NAME-3); no other tool pays
    for it. Full descriptions and usage examples stay in
    :meth:`DiscoverResult.model_dump` (``cartograph discover --json``).
    """
    lines: list[str] = [result.hint] if result.abstained and result.hint else []
    for server, tools in _by_server(result.tools):
        lines.append(f"[{server}]")
        lines += [
            f"- {t.tool}({_signature(t.input_schema)}): {_gist(t)}{_name_note(t)}" for t in tools
        ]
    if not result.tools:
        lines.append("No tools are available.")
    return "\n".join(lines)


def discover_structured(result: DiscoverResult) -> dict[str, Any]:
    """What the proxy returns as ``structuredContent``: ids, scores, provenance.

    The agent reads :func:`discover_text`, which already carries every argument
    losslessly; repeating descriptions and schemas here would double the
    response. This is the machine-readable part a client needs to follow
    up (which server/tool, how sure, which signed card vouches for it), and,
    on a tool whose name another server's tool also has (only there), that
    note as ``shared_name`` (P-NAME-3). The full result stays available as
    :meth:`DiscoverResult.model_dump` (library, CLI ``--json``).
    """
    # Cards grouped by who signed them: one operator key usually signs every
    # card, and a 64-hex key id repeated per server would dominate the reply.
    signed: dict[tuple[str, str, bool], dict[str, int]] = {}
    for t in result.tools:
        p = t.provenance
        group = signed.setdefault(
            (p.key_id, f"{p.generator}/{p.generator_version}", p.verified), {}
        )
        group[t.server] = p.card_version
    cards = [
        {"key_id": key, "generator": gen, "verified": ok, "card_versions": versions}
        for (key, gen, ok), versions in signed.items()
    ]
    out: dict[str, Any] = {
        "tools": [_entry(t) for t in result.tools],
        "abstained": result.abstained,
        "confidence": result.confidence,
        "signed": cards,
    }
    if result.hint:
        out["hint"] = result.hint
    return out


def _entry(tool: DiscoveredTool) -> dict[str, Any]:
    entry: dict[str, Any] = {"server": tool.server, "tool": tool.tool, "score": tool.score}
    if tool.shared_name is not None:
        entry["shared_name"] = tool.shared_name.model_dump()
    return entry


def _name_note(tool: DiscoveredTool) -> str:
    """`` [name also calc/echo; not ranked by name]``: two tools answer to one name.

    The agent then chooses by server and description, not by the name; "not
    ranked by name" says the index judged the name another tool's (a copy or
    look-alike the operator did not vouch for).
    """
    note = tool.shared_name
    if note is None:
        return ""
    ranked = "ranked by name" if note.ranked_by_name else "not ranked by name"
    more = f" and {note.more} more" if note.more else ""
    return f" [name also {', '.join(note.also)}{more}; {ranked}]"


def _by_server(tools: list[DiscoveredTool]) -> list[tuple[str, list[DiscoveredTool]]]:
    """Tools grouped under their server, servers in the order of their best tool."""
    groups: dict[str, list[DiscoveredTool]] = {}
    for t in tools:
        groups.setdefault(t.server, []).append(t)
    return list(groups.items())


def _signature(schema: dict[str, Any]) -> str:
    return schema_signature(schema) if schema.get("properties") else ""


def _gist(tool: DiscoveredTool) -> str:
    """The description's first informative clause: enough to choose, far fewer tokens.

    The operator's full description stays in the structured result
    (:meth:`DiscoverResult.model_dump`, ``cartograph discover --json``).
    """
    return _informative(tool.description, tool.tool, tool.input_schema).split("; ")[0]


def _informative(description: str, tool: str, schema: dict[str, Any]) -> str:
    """Drop sentences whose words all come from the tool's or its arguments' names.

    The card template's structure sentences ("Needs path, content.", "Takes
    no inputs.") only restate the argument list printed beside them.
    """
    description = plain_description(description, "")
    known = set(tokenize(tool)) | {"input", "optional", "argument", "parameter"}
    for name in schema.get("properties") or {}:
        known.update(tokenize(str(name)))
    kept = [s for s in _SENTENCE.split(description) if s and not set(tokenize(s)) <= known]
    return " ".join(kept) if kept else description


__all__ = ["discover_structured", "discover_text"]
