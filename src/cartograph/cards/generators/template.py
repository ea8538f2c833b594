"""The template generator: deterministic, offline, the default.

The paper's bootstrap wrote "Server: X. Contains N tool(s)." for every
server and one line per tool, which gave 29 tools identical text and a
zero-margin cluster. This generator builds every tool's text from what the
tool *is*: its name split into words, its parameters (names, types, enums,
required), and a sanitised digest of the publisher's description. Every
server's summary has the same shape and length budget, so no server's
centroid dominates Stage 1 ranking (the paper's "centroid imbalance").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from cartograph.cards.generators.base import GeneratorInfo, Progress, ServerText, ToolText
from cartograph.cards.generators.schema import (
    example_for,
    param_phrase,
    properties,
    required,
    sanitise_schema,
)
from cartograph.cards.generators.text import (
    break_copied_runs,
    cap_words,
    describe_fragment,
    phrase,
    publisher_ngrams,
    readable_words,
    tokens,
)
from cartograph.cards.model import Capability
from cartograph.catalog.model import ServerDef, ToolDef

TEMPLATE_GENERATOR: Final = "template"
TEMPLATE_VERSION: Final = "2"
TOOL_DIGEST_WORDS: Final = 40
TOOL_TEXT_WORDS: Final = 110
INPUTS_LISTED: Final = 4
SERVER_DIGEST_WORDS: Final = 30
SERVER_TOOLS_LISTED: Final = 12
SERVER_SUMMARY_WORDS: Final = 90
TAG_COUNT: Final = 6
_STOP: Final = frozenset(
    """a an the and or of to in on for with by from at as is are be this that it its into
    via using use used get set list all any some one new current given specified specific
    based about over your you their them can will may which what when where how tool tools
    server servers mcp api data""".split()  # noqa: SIM905 - a word list reads better as text
)


_NAME_BOILERPLATE: Final = frozenset({"mcp", "server", "service", "model", "context", "protocol"})


class TemplateGenerator:
    """Deterministic card text from names, schemas and sanitised publisher hints."""

    @property
    def info(self) -> GeneratorInfo:
        return GeneratorInfo(TEMPLATE_GENERATOR, TEMPLATE_VERSION)

    def describe_all(
        self, servers: Sequence[ServerDef], *, progress: Progress | None = None
    ) -> dict[str, ServerText]:
        out: dict[str, ServerText] = {}
        for server in servers:
            out[server.name] = self.describe(server)
            if progress is not None:
                progress(server.name)
        return out

    def describe(self, server: ServerDef) -> ServerText:
        grams = publisher_ngrams(publisher_texts(server))
        texts = {tool.name: _tool_text(tool, grams) for tool in server.tools}
        texts = _make_distinct(texts)
        return ServerText(capability=_capability(server, grams), tools=texts)


def publisher_texts(server: ServerDef) -> list[str]:
    """Every piece of publisher prose a card must not copy."""
    texts = [server.description]
    for tool in server.tools:
        texts += [tool.description, tool.title or ""]
        texts += [str(p.get("description", "")) for p in properties(tool.input_schema).values()]
    return [t for t in texts if t]


def tool_action(tool: ToolDef) -> str:
    """The tool's name as a plain phrase: ``get_repo_info`` → ``Get repository information``."""
    words = readable_words(tool.name)
    return phrase([w for w in words if w != "mcp"] or words) or tool.name


def _tool_text(tool: ToolDef, grams: set[tuple[str, ...]]) -> ToolText:
    props = properties(tool.input_schema)
    needed = set(required(tool.input_schema))
    ordered = sorted(props, key=lambda n: (n not in needed, list(props).index(n)))
    phrases = [param_phrase(name, props[name], name in needed) for name in ordered]
    digest = describe_fragment(tool.description, max_words=TOOL_DIGEST_WORDS)
    description = _tool_description(tool, digest, ordered, props, needed)
    arguments = "; ".join(phrases) if phrases else "no arguments"
    return ToolText(
        description=break_copied_runs(cap_words(description, TOOL_TEXT_WORDS), grams),
        arguments=break_copied_runs(arguments, grams),
        example=example_for(tool.input_schema),
        input_schema=sanitise_schema(tool.input_schema),
    )


def _tool_description(
    tool: ToolDef,
    digest: str,
    ordered: list[str],
    props: Mapping[str, Mapping[str, Any]],
    needed: set[str],
) -> str:
    parts = [f"{tool_action(tool)}."]
    if digest and _adds_words(digest, tool.name):
        parts.append(f"{digest}.")
    inputs = [" ".join(readable_words(name)) or name for name in ordered if name in needed]
    if inputs:
        shown = ", ".join(inputs[:INPUTS_LISTED])
        more = f" and {len(inputs) - INPUTS_LISTED} more" if len(inputs) > INPUTS_LISTED else ""
        parts.append(f"Needs {shown}{more}.")
    elif not props:
        parts.append("Takes no inputs.")
    return " ".join(parts)


def _adds_words(digest: str, name: str) -> bool:
    """A digest that only repeats the tool name adds nothing to rank on."""
    return bool(set(tokens(digest)) - set(readable_words(name)) - _STOP)


def _make_distinct(texts: dict[str, ToolText]) -> dict[str, ToolText]:
    """Guarantee distinct text within a server by naming the tool where needed."""
    counts = Counter(t.description for t in texts.values())
    return {
        name: text
        if counts[text.description] == 1
        else ToolText(
            f"{text.description} Tool name: {name}.",
            text.arguments,
            text.example,
            text.input_schema,
        )
        for name, text in texts.items()
    }


def _capability(server: ServerDef, grams: set[tuple[str, ...]]) -> Capability:
    title = server_title(server.name)
    digest = describe_fragment(server.description, max_words=SERVER_DIGEST_WORDS)
    actions = [tool_action(t).lower() for t in server.tools[:SERVER_TOOLS_LISTED]]
    more = len(server.tools) - len(actions)
    parts = [f"{title}."]
    if digest:
        parts.append(f"{digest}.")
    if actions:
        listing = ", ".join(actions) + (f" and {more} more" if more > 0 else "")
        parts.append(f"Tools: {listing}.")
    summary = break_copied_runs(cap_words(" ".join(parts), SERVER_SUMMARY_WORDS), grams)
    return Capability(
        summary=summary,
        guidance=_guidance(server),
        tags=_tags(server),
    )


def server_title(name: str) -> str:
    """The server's name as words, without the "MCP server" boilerplate every name repeats."""
    words = readable_words(name)
    plain = [w for w in words if w not in _NAME_BOILERPLATE]
    deduped = [w for i, w in enumerate(plain) if w not in plain[:i]]
    return phrase(deduped or words) or name


def _guidance(server: ServerDef) -> str:
    inputs = Counter(
        word
        for tool in server.tools
        for name in properties(tool.input_schema)
        for word in [" ".join(readable_words(name))]
    )
    common = [w for w, _ in inputs.most_common(5)]
    count = len(server.tools)
    text = f"{count} tool{'s' if count != 1 else ''}."
    return f"{text} Common inputs: {', '.join(common)}." if common else text


def _tags(server: ServerDef) -> tuple[str, ...]:
    words = Counter(
        w
        for tool in server.tools
        for w in set(readable_words(tool.name))
        if w not in _STOP and len(w) > 2 and not w.isdigit()
    )
    return tuple(w for w, _ in words.most_common(TAG_COUNT))
