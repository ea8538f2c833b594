"""The template generator: deterministic, offline, the default.

Every tool's card text is written from what the tool *is*, in the operator's
voice (:mod:`.phrasing`), plus what its publisher says about it that survives
:mod:`.publisher`'s rules, kept as whole sentences:

- ``description``: a purpose sentence from the tool's name ("Get the current
  time."), then up to three of the publisher's sentences that describe this
  tool, then what it needs ("Needs timezone.");
- ``arguments``: each parameter in plain words with its publisher hint, if
  the hint is a short, acceptable sentence;
- ``examples``: 3–8 short tasks built from the name and the arguments;
  ``synonyms`` and ``when_to_use`` likewise.

The paper's bootstrap wrote "Server: X. Contains N tool(s)." for every
server, which gave many tools identical text; here every server's summary
has the same shape and length budget, so no server's centroid dominates
Stage 1 ranking (the paper's "centroid imbalance"). A tool whose name mixes
writing systems (Latin with Cyrillic/Greek look-alikes) is an impersonation
attempt: its card describes it by its inputs only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from cartograph.cards.generators.base import GeneratorInfo, Progress, ServerText, ToolText
from cartograph.cards.generators.phrasing import arg_words, is_action_name, name_words, phrase_for
from cartograph.cards.generators.publisher import Topic, publisher_sentences, schema_names, topic
from cartograph.cards.generators.schema import (
    example_for,
    param_phrase,
    properties,
    required,
    sanitise_schema,
)
from cartograph.cards.generators.text import (
    is_mixed_script,
    phrase,
    prose_sentences,
    readable_words,
)
from cartograph.cards.model import Capability
from cartograph.catalog.model import ServerDef, ToolDef
from cartograph.names import invisible_characters

TEMPLATE_GENERATOR: Final = "template"
TEMPLATE_VERSION: Final = "5"
INPUTS_LISTED: Final = 4
SERVER_SENTENCES: Final = 2
SERVER_WORDS: Final = 30
SERVER_TOOLS_LISTED: Final = 12
TAG_COUNT: Final = 6
OPAQUE_NAME: Final = (
    "Tool whose name mixes writing systems (look-alike letters); described by its inputs only."
)
_STOP: Final = frozenset(
    """a an the and or of to in on for with by from at as is are be this that it its into
    via using use used get set list all any some one new current given specified specific
    based about over your you their them can will may which what when where how tool tools
    server servers mcp api data""".split()  # noqa: SIM905 - a word list reads better as text
)
_NAME_BOILERPLATE: Final = frozenset({"mcp", "server", "service", "model", "context", "protocol"})


class TemplateGenerator:
    """Deterministic card text from names, schemas and sanitised publisher sentences."""

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
        title = server_title(server.name)
        siblings = tuple(t.name for t in server.tools if not is_opaque(t.name))
        texts = {t.name: tool_text(t, server.name, title, siblings) for t in server.tools}
        return ServerText(capability=_capability(server, title), tools=_make_distinct(texts))


def publisher_texts(server: ServerDef) -> list[str]:
    """Every piece of publisher prose the server served (descriptions, titles, parameter text)."""
    texts = [server.description]
    for tool in server.tools:
        texts += [tool.description, tool.title or ""]
        texts += [str(p.get("description", "")) for p in properties(tool.input_schema).values()]
    return [t for t in texts if t]


def is_opaque(name: str) -> bool:
    """A name that hides what it is: a word mixing scripts ("get_currеnt_time" with a
    Cyrillic е), or characters a reader cannot see (a zero-width space, a bidi control)."""
    if invisible_characters(name):
        return True
    return any(is_mixed_script(word) for word in name.replace("-", "_").split("_"))


def tool_action(tool: ToolDef) -> str:
    """The tool's purpose in a few words, lower-case: ``get the current time``."""
    if is_opaque(tool.name):
        return "unnamed tool"
    needed = required(tool.input_schema)
    return phrase_for(tool.name, needed, [], "").purpose.rstrip(".").lower()


def tool_text(tool: ToolDef, server: str, title: str, siblings: Sequence[str] = ()) -> ToolText:
    """The operator's text for one tool (see the module docstring).

    Publisher sentences must be on the topic of the tool's server: its name,
    the names of its tools and of this tool's arguments (``siblings`` are the
    server's tool names). Mentioning a sibling's *identifier* still drops a
    sentence; sharing its words does not.
    """
    props = properties(tool.input_schema)
    needed = set(required(tool.input_schema))
    ordered = sorted(props, key=lambda n: (n not in needed, list(props).index(n)))
    arguments = _arguments(tool, props, needed, ordered)
    schema = sanitise_schema(tool.input_schema)
    example = example_for(tool.input_schema)
    if is_opaque(tool.name):
        description = " ".join(p for p in (OPAQUE_NAME, _needs(ordered, needed, props)) if p)
        return ToolText(description, arguments, example, schema)
    wanted = [n for n in ordered if n in needed]
    optional = [n for n in ordered if n not in needed]
    said = phrase_for(tool.name, wanted, optional, title)
    own = [tool.name, *schema_names(tool.input_schema)]
    about = topic(tool.name, *props, server, *siblings, names=own)
    kept = publisher_sentences(
        tool.description or tool.title or "", about, seen=name_words(tool.name)
    )
    if not kept and not is_action_name(tool.name):
        kept = _opening_sentence(tool.description or tool.title or "", about, tool.name)
    description = " ".join([said.purpose, *kept, _needs(ordered, needed, props)]).strip()
    return ToolText(
        description=description,
        arguments=arguments,
        example=example,
        input_schema=schema,
        when_to_use=said.when_to_use,
        synonyms=said.synonyms,
        examples=said.examples,
    )


def _opening_sentence(text: str, about: Topic, name: str) -> list[str]:
    """The publisher's first sentence, for a tool whose name does not say what it does.

    A brand or noun name ("ABCmouse", "CharityTool", "Services_4_FindProvider")
    shares no word with what the tool is for, so the topic check drops every
    sentence and the card says nothing of its purpose. Then the *opening*
    sentence alone, the publisher's own statement of what the tool is, is
    kept if every other rule passes (no instruction, question, stuffing,
    keyword run, superlative or other tool's identifier). A name that reads as
    an action ("translate_text") already says what the tool does: a sentence
    sharing none of its words is a claim on another topic and stays dropped.
    """
    opening = prose_sentences(text)[:1]
    if not opening:
        return []
    unchecked = Topic(names=about.names)
    return publisher_sentences(opening[0], unchecked, seen=name_words(name), max_sentences=1)


def _arguments(
    tool: ToolDef, props: Mapping[str, Mapping[str, Any]], needed: set[str], ordered: list[str]
) -> str:
    names = [tool.name, *schema_names(tool.input_schema)]
    phrases = [
        param_phrase(n, props[n], n in needed, topic(n, tool.name, names=names)) for n in ordered
    ]
    return "; ".join(phrases) if phrases else "no arguments"


def _needs(ordered: list[str], needed: set[str], props: Mapping[str, Any]) -> str:
    inputs = [" ".join(arg_words(name)) or name for name in ordered if name in needed]
    if inputs:
        shown = ", ".join(inputs[:INPUTS_LISTED])
        more = f" and {len(inputs) - INPUTS_LISTED} more" if len(inputs) > INPUTS_LISTED else ""
        return f"Needs {shown}{more}."
    return "" if props else "Takes no inputs."


def _make_distinct(texts: dict[str, ToolText]) -> dict[str, ToolText]:
    """Guarantee distinct text within a server by naming the tool where needed."""
    counts = Counter(t.description for t in texts.values())
    return {
        name: text
        if counts[text.description] == 1
        else replace(text, description=f"{text.description} Tool name: {name}.")
        for name, text in texts.items()
    }


def _capability(server: ServerDef, title: str) -> Capability:
    names = [t.name for t in server.tools if not is_opaque(t.name)]
    about = topic(server.name, *names, names=names)
    kept = publisher_sentences(
        server.description, about, max_sentences=SERVER_SENTENCES, max_words=SERVER_WORDS
    )
    actions = [tool_action(t) for t in server.tools[:SERVER_TOOLS_LISTED]]
    more = len(server.tools) - len(actions)
    parts = [f"{title}.", *kept]
    if actions:
        listing = ", ".join(actions) + (f" and {more} more" if more > 0 else "")
        parts.append(f"Tools: {listing}.")
    return Capability(summary=" ".join(parts), guidance=_guidance(server), tags=_tags(server))


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
        if not is_opaque(tool.name)
        for w in dict.fromkeys(readable_words(tool.name))
        if w not in _STOP and len(w) > 2 and not w.isdigit()
    )
    return tuple(w for w, _ in words.most_common(TAG_COUNT))
