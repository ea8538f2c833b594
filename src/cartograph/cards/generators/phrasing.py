"""Operator text from a tool's *identity*: its name, its arguments, its server.

A tool's name is usually a verb and an object (``get_current_time``,
``createIssue``, ``browser_take_screenshot``, ``trial_references_getter``).
This module reads it as an :class:`Action` and writes, deterministically:

- a purpose sentence ("Get the current time."),
- 3–8 short example tasks, the way an agent is asked for the tool
  ("show me the current time", "get the current time in a timezone"),
- synonyms of the action's verb, and a when-to-use sentence.

The verbs are grouped into classes of ordinary English (retrieve, list,
search, create, …); each class has a few task templates. Nothing here is
written for any benchmark's tasks: the rules are over verbs, objects and
argument names, and no publisher prose is used (only identifiers), so
examples cannot carry a publisher's keywords.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from cartograph.cards.generators.text import readable_words

MIN_EXAMPLES: Final = 3
MAX_EXAMPLES: Final = 8
MAX_NAME_WORDS: Final = 7
MAX_EXAMPLE_WORDS: Final = 14
ARGUMENT_EXAMPLES: Final = 2


@dataclass(frozen=True)
class VerbClass:
    """Verbs that mean the same kind of action, with the tasks people phrase for them.

    Templates use ``{verb}`` (the tool's own verb), ``{obj}`` (the object with
    the class's article), ``{bare}`` (without), ``{new}`` ("a new issue",
    "new entities"), ``{plural}`` and ``{ask}`` ("what is" for information
    such as a time or a status, "look up" for things such as a file).
    """

    name: str
    verbs: frozenset[str]
    synonyms: tuple[str, ...]
    templates: tuple[str, ...]
    article: str = "the"
    preposition: str = "for"


def _verbs(text: str) -> frozenset[str]:
    """A word set written as one string (reads better than a list of quoted words)."""
    return frozenset(text.split())


VERB_CLASSES: Final = (
    VerbClass(
        "retrieve",
        _verbs(
            "get fetch retrieve read show view display load obtain peek print cat access see "
            "describe"
        ),
        ("fetch", "retrieve", "look up", "show"),
        ("{verb} {obj}", "show me {obj}", "{ask} {obj}"),
    ),
    VerbClass(
        "list",
        _verbs("list enumerate"),
        ("show all", "enumerate", "browse"),
        ("{verb} {plural}", "show all {plural}", "which {plural} are there"),
        preposition="in",
    ),
    VerbClass(
        "search",
        _verbs("search find query lookup look locate discover grep seek explore filter"),
        ("find", "look up", "query"),
        ("{verb} {bare}", "find {bare}", "look up {bare}"),
        preposition="by",
    ),
    VerbClass(
        "create",
        _verbs(
            "create add make new generate build insert register init initialize compose draft "
            "define produce spawn provision"
        ),
        ("make", "add", "store", "record", "set up"),
        ("{verb} {obj}", "make {new}", "add {obj}"),
        article="a",
        preposition="with",
    ),
    VerbClass(
        "write",
        _verbs("write save store put record persist remember export dump append keep note"),
        ("save", "store", "record"),
        ("{verb} {obj}", "save {obj}", "store {obj}"),
        article="a",
        preposition="to",
    ),
    VerbClass(
        "update",
        _verbs(
            "update edit modify change set rename patch replace configure adjust toggle reset "
            "mark assign label rewrite resize manage upgrade"
        ),
        ("change", "edit", "modify"),
        ("{verb} {obj}", "change {obj}", "edit {obj}"),
        preposition="with",
    ),
    VerbClass(
        "delete",
        _verbs("delete remove clear drop destroy erase purge unlink uninstall revoke detach"),
        ("remove", "erase", "get rid of"),
        ("{verb} {obj}", "remove {obj}", "get rid of {obj}"),
        preposition="by",
    ),
    VerbClass(
        "send",
        _verbs(
            "send post publish notify email message reply comment share invite tweet broadcast "
            "forward announce submit"
        ),
        ("send", "post", "share"),
        ("{verb} {obj}", "send {obj}", "post {obj}"),
        article="a",
        preposition="to",
    ),
    VerbClass(
        "run",
        _verbs(
            "run execute exec start launch invoke call trigger apply deploy perform install "
            "restart scale rollout emulate simulate"
        ),
        ("run", "execute", "start"),
        ("{verb} {obj}", "run {obj}", "execute {obj}"),
        preposition="with",
    ),
    VerbClass(
        "stop",
        _verbs("stop cancel kill terminate end pause abort halt disable close exit quit"),
        ("stop", "cancel", "end"),
        ("{verb} {obj}", "stop {obj}", "cancel {obj}"),
    ),
    VerbClass(
        "convert",
        _verbs(
            "convert transform translate format parse encode decode render compile serialize "
            "transcribe split"
        ),
        ("convert", "transform", "turn into"),
        ("{verb} {obj}", "convert {obj}", "transform {obj}"),
        preposition="into",
    ),
    VerbClass(
        "calculate",
        _verbs("calculate compute count measure estimate evaluate score sum average solve predict"),
        ("calculate", "compute", "work out"),
        ("{verb} {obj}", "calculate {obj}", "work out {obj}"),
    ),
    VerbClass(
        "check",
        _verbs(
            "check validate verify test lint audit review diff compare scan detect monitor "
            "track ping probe diagnose debug analyze analyse assess inspect"
        ),
        ("check", "verify", "inspect"),
        ("{verb} {obj}", "check {obj}", "inspect {obj}"),
    ),
    VerbClass(
        "reason",
        _verbs(
            "summarize summarise extract classify explain interpret think reason plan reflect "
            "brainstorm outline"
        ),
        ("summarize", "analyze", "explain"),
        ("{verb} {obj}", "summarize {obj}", "explain {obj}"),
    ),
    VerbClass(
        "navigate",
        _verbs("navigate open go visit browse goto refresh reload"),
        ("open", "go to", "visit"),
        ("{verb} {obj}", "open {obj}", "go to {obj}"),
        preposition="to",
    ),
    VerbClass(
        "interact",
        _verbs("click type press fill hover scroll select drag tap focus choose upload handle"),
        ("click", "interact with"),
        ("{verb} {obj}", "{verb} {obj} on the page", "interact with {obj}"),
        preposition="on",
    ),
    VerbClass(
        "capture",
        _verbs("take capture screenshot snapshot grab scrape crawl download"),
        ("capture", "grab", "save"),
        ("{verb} {obj}", "capture {obj}", "grab {obj}"),
        article="a",
    ),
    VerbClass(
        "move",
        _verbs(
            "move copy transfer sync push pull merge checkout switch commit fork clone import "
            "backup restore rebase stash"
        ),
        ("move", "copy", "transfer"),
        ("{verb} {obj}", "{verb} {bare}", "use this to {verb} {obj}"),
    ),
)
NOUN_CLASS: Final = VerbClass(
    "noun",
    frozenset(),
    ("get", "show", "look up"),
    ("{bare}", "show me {obj}", "{ask} {obj}"),
)
"""A name without a verb ("git_status") says what the tool is about, not what it does:
its purpose is the noun phrase itself, and no verb is invented for it."""
_CLASS_OF: Final = {verb: c for c in VERB_CLASSES for verb in c.verbs}

# Agent nouns in names ("trial_references_getter") name the same action.
_AGENT_NOUNS: Final = {
    "getter": "get",
    "fetcher": "fetch",
    "reader": "read",
    "writer": "write",
    "searcher": "search",
    "finder": "find",
    "creator": "create",
    "generator": "generate",
    "builder": "build",
    "converter": "convert",
    "translator": "translate",
    "formatter": "format",
    "parser": "parse",
    "renderer": "render",
    "calculator": "calculate",
    "counter": "count",
    "checker": "check",
    "validator": "validate",
    "analyzer": "analyze",
    "analyser": "analyze",
    "summarizer": "summarize",
    "extractor": "extract",
    "scraper": "scrape",
    "crawler": "crawl",
    "downloader": "download",
    "uploader": "upload",
    "sender": "send",
    "runner": "run",
    "executor": "execute",
    "monitor": "monitor",
    "tracker": "track",
    "planner": "plan",
    "scheduler": "schedule",
    "viewer": "view",
    "lister": "list",
    "splitter": "split",
    "loader": "load",
    "exporter": "export",
    "importer": "import",
    "manager": "manage",
}
_DROPPED_NAME_WORDS: Final = frozenset({"mcp", "api", "tool", "tools", "fn", "func", "cmd", "v1"})
_GENERIC_ARGUMENTS: Final = frozenset(
    {"input", "inputs", "args", "arguments", "params", "parameters", "options", "config", "request"}
)
_MASS_NOUNS: Final = frozenset(
    """content contents text code data information memory weather time status history news
    feedback json html markdown metadata evidence traffic music audio money research
    documentation knowledge help usage output input storage""".split()  # noqa: SIM905
)
_ACRONYMS: Final = _verbs(
    "url uri api html json csv pdf sql http https id ip dns ssh xml yaml css svg png jpeg "
    "gif mp3 mp4 llm ai sdk cli ui ocr pr tcp udp"
)
_HEAD_PREPOSITIONS: Final = {
    **dict.fromkeys(
        _verbs(
            "timezone zone language locale format currency unit units region country city "
            "location repository branch folder directory namespace database table channel "
            "project workspace"
        ),
        "in",
    ),
    **dict.fromkeys(_verbs("url uri link source origin sender"), "from"),
    **dict.fromkeys(_verbs("query keyword keywords term terms topic question prompt"), "for"),
    **dict.fromkeys(_verbs("owner user author creator assignee"), "by"),
    **dict.fromkeys(_verbs("destination target recipient dest output"), "to"),
    **dict.fromkeys(_verbs("path address line position index coordinates"), "at"),
    **dict.fromkeys(
        _verbs(
            "content text body message value values code command script expression title "
            "subject caption label tags"
        ),
        "with",
    ),
}
# Arguments that pick *which* thing (its name, id, type): "for" it, or "with" it when the
# action makes or changes the thing ("create a repository with a name").
_SELECTORS: Final = _verbs("name id identifier type kind number key symbol ticker")
_LOCATIONS: Final = _verbs("path directory folder dir root cwd workspace repository repo")
_ARTICLES: Final = _verbs("a an the")
_PREPOSITIONS: Final = _verbs("in on at to from for with by into onto of")
_FROM_WORDS: Final = frozenset({"source", "from", "src", "origin", "input", "original"})
_TO_WORDS: Final = frozenset({"target", "to", "dest", "destination", "output"})


@dataclass(frozen=True)
class Action:
    """A tool name read as a verb acting on an object, maybe within a context."""

    verb: str
    kind: VerbClass
    obj: tuple[str, ...]
    context: tuple[str, ...] = ()
    proper: bool = False
    """The object is a name (the server's: "search wikipedia"), so it takes no article."""
    tail: tuple[str, ...] = ()
    """Words after the object ("in pod" in ``exec_in_pod``)."""


@dataclass(frozen=True)
class Phrasing:
    """Everything this module writes for one tool."""

    purpose: str
    examples: tuple[str, ...]
    synonyms: tuple[str, ...]
    when_to_use: str


def is_action_name(identifier: str) -> bool:
    """Whether an identifier reads as a tool name: it starts with an action verb (``read_file``)."""
    words = readable_words(identifier)
    return bool(words) and (words[0] in _CLASS_OF or words[-1] in _AGENT_NOUNS)


def name_words(name: str) -> list[str]:
    """The tool name as plain words, without "mcp"/"api" noise or articles, at most a few."""
    words = readable_words(name)
    kept = [w for w in words if w not in _DROPPED_NAME_WORDS and w not in _ARTICLES] or words
    return kept[:MAX_NAME_WORDS]


def read_action(name: str, required: Sequence[str], server_title: str) -> Action:
    """Split ``name`` into verb, object and context; fill a missing object from args or server."""
    words = name_words(name)
    verb_at = next((i for i, w in enumerate(words) if w in _CLASS_OF), None)
    agent_at = next((i for i, w in enumerate(words) if w in _AGENT_NOUNS), None)
    if verb_at is None and agent_at is not None:
        verb = _AGENT_NOUNS[words[agent_at]]
        obj = tuple(words[:agent_at] + words[agent_at + 1 :])
        action = Action(verb, _CLASS_OF.get(verb, NOUN_CLASS), obj)
    elif verb_at is None:
        return Action("", NOUN_CLASS, tuple(words))
    else:
        verb, rest = _verb_phrase(words[verb_at:])
        if verb == "new":  # new_page: "create a new page"
            verb, rest = "create", ("new", *rest)
        action = Action(verb, _CLASS_OF[words[verb_at]], rest, tuple(words[:verb_at]))
    if action.obj and action.obj[0] in _PREPOSITIONS:  # exec_in_pod: the object is missing
        found = _with_fallback_object(replace(action, obj=()), required, server_title)
        return replace(found, tail=action.obj)
    if action.obj:
        return action
    return _with_fallback_object(action, required, server_title)


def _verb_phrase(words: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """``create or update file`` → ("create or update", ("file",)): joined verbs stay one verb."""
    if len(words) > 2 and words[1] in ("or", "and") and words[2] in _CLASS_OF:
        return " ".join(words[:3]), tuple(words[3:])
    return words[0], tuple(words[1:])


def _with_fallback_object(action: Action, required: Sequence[str], server_title: str) -> Action:
    """What a bare verb ("fetch", "git_commit", "search") acts on.

    In order: its first required argument that names a *what* rather than a
    *where* ("url", "message"; not "repository path"); the name's context
    ("browser" in ``browser_close``); its server ("search wikipedia"); its
    first argument of any kind.
    """
    server = tuple(w for w in server_title.lower().split() if w != action.verb)
    args = [a for a in (arg_words(r) for r in required) if a and a[-1] not in _GENERIC_ARGUMENTS]
    what = [a for a in args if a[-1] not in _LOCATIONS and not (len(a) == 1 and a[0] in _SELECTORS)]
    if what and not (action.kind.name in ("search", "list") and server):
        thing = what[0][:-1] if len(what[0]) > 1 and what[0][-1] in _SELECTORS else what[0]
        return Action(action.verb, action.kind, tuple(thing), action.context)
    if action.context:
        return Action(action.verb, action.kind, action.context, proper=True)
    if server:
        return Action(action.verb, action.kind, server, proper=True)
    return Action(action.verb, action.kind, tuple(args[0]) if args else ())


def arg_words(name: str) -> list[str]:
    return readable_words(name)[:4]


def phrase_for(
    name: str, required: Sequence[str], optional: Sequence[str], server_title: str
) -> Phrasing:
    """Purpose, example tasks, synonyms and when-to-use for one tool."""
    action = read_action(name, required, server_title)
    base = [_render(t, action) for t in action.kind.templates]
    with_args = _argument_examples(action, required or optional[:1])
    core = _render(_core(action), action)
    extras = [_render("{verb} {bare}", action)] if action.verb else []
    title = server_title.lower()
    if title and not set(title.split()) & set(action.obj) and title != action.verb:
        extras.append(f"use {title} to {core}" if action.verb else f"{core} in {title}")
    examples = _distinct([*base[:1], *with_args, *base[1:], *extras])
    if len(examples) < MIN_EXAMPLES:  # a bare verb: say it with its synonyms
        padding = [f"{s} {_render('{obj}', action)}".strip() for s in action.kind.synonyms]
        examples = _distinct(
            [*examples, *padding, *(f"{s} {name}" for s in ("use", "run", "call"))]
        )
    purpose = core
    if action.context and action.context != action.obj:
        purpose += " in " + " ".join(action.context)
    first = with_args[0] if with_args else purpose
    return Phrasing(
        purpose=_sentence(purpose),
        examples=tuple(examples[:MAX_EXAMPLES]),
        synonyms=tuple(s for s in action.kind.synonyms if s != action.verb)[:5],
        when_to_use=f"Use {'to' if action.verb else 'for'} {_display(first)}.",
    )


def _argument_examples(action: Action, args: Sequence[str]) -> list[str]:
    """Tasks that name what the tool needs: "get the current time in a timezone"."""
    words = [arg_words(a) for a in args]
    words = [
        w for w in words if w and not set(w) <= set(action.obj) and w[-1] not in _GENERIC_ARGUMENTS
    ]
    core = _render(_core(action), action)
    pair = _from_to(words)
    if pair is not None:
        source, target = pair
        return [f"{core} from {_article(source, 'a')} to {_article(target, 'a')}"]
    out = []
    for arg in words[:ARGUMENT_EXAMPLES]:
        preposition = _HEAD_PREPOSITIONS.get(arg[-1], action.kind.preposition)
        if arg[-1] in _SELECTORS:
            preposition = "with" if action.kind.preposition == "with" else "for"
        out.append(f"{core} {preposition} {_article(arg, 'a')}")
    return out


def _core(action: Action) -> str:
    """The action in two or three words: "get the current time", or "git status" for a noun."""
    return "{verb} {obj}" if action.verb else "{bare}"


def _from_to(args: Sequence[Sequence[str]]) -> tuple[list[str], list[str]] | None:
    """``source_timezone`` + ``target_timezone``: "from a source timezone to a target timezone"."""
    source = next((list(a) for a in args if a[0] in _FROM_WORDS and len(a) > 1), None)
    target = next((list(a) for a in args if a[0] in _TO_WORDS and len(a) > 1), None)
    return (source, target) if source and target else None


def _render(template: str, action: Action) -> str:
    obj = list(action.obj)
    plural = _is_plural(obj)
    bare = _display_words(obj)
    tail = f" {_display_words(action.tail)}" if action.tail else ""
    text = template.format(
        verb=action.verb or "get",
        obj=(bare if action.proper else _article(obj, action.kind.article)) + tail,
        new=_new(obj, action.proper or plural or _is_mass(obj)),
        bare=bare,
        plural=_display_words(obj if plural or _is_mass(obj) else [*obj[:-1], _pluralise(obj[-1])])
        if obj
        else "",
        ask=("what are" if plural else "what is") if _is_mass(obj) else "look up",
    )
    return " ".join(text.split()[:MAX_EXAMPLE_WORDS])


def _new(obj: Sequence[str], bare: bool) -> str:
    """ "a new issue", "new entities"; an object already "new …" is not made newer."""
    words = list(obj[1:]) if list(obj[:1]) == ["new"] else list(obj)
    return f"new {_display_words(words)}" if bare else _article(["new", *words], "a")


def _article(words: Sequence[str], kind: str) -> str:
    """``the current time`` / ``an issue`` / ``entities`` (plural and mass nouns go bare in "a")."""
    if not words:
        return ""
    shown = _display_words(words)
    if kind == "the":
        return f"the {shown}"
    if _is_plural(words) or _is_mass(words):
        return shown
    return f"{'an' if _vowel_sound(words[0]) else 'a'} {shown}"


def _vowel_sound(word: str) -> bool:
    if word in _ACRONYMS:
        return word[0] in "aefhilmnorsx"
    return word[0] in "aeio" or word.startswith(("un", "up", "ut", "um"))


def _is_plural(words: Sequence[str]) -> bool:
    last = words[-1] if words else ""
    return len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is", "ics"))


def _is_mass(words: Sequence[str]) -> bool:
    return bool(words) and words[-1] in _MASS_NOUNS


def _pluralise(word: str) -> str:
    if word in _ACRONYMS:
        return word + "s"
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def _display_words(words: Sequence[str]) -> str:
    return " ".join(w.upper() if w in _ACRONYMS else w for w in words)


def _display(text: str) -> str:
    return " ".join(text.split())


def _sentence(text: str) -> str:
    text = _display(text)
    return (text[:1].upper() + text[1:] + ".") if text else ""


def _distinct(examples: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for example in examples:
        key = " ".join(example.lower().split())
        if key and key not in seen and len(key.split()) >= 2:
            seen.add(key)
            out.append(_display(example))
    return out
