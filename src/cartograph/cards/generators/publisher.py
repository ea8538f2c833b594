"""Which sentences of a publisher's description a card may keep, whole.

The publisher's text is untrusted: it may describe the tool, or it may try to
steer ranking — keyword stuffing ("current time in Tokyo, time now, Tokyo
time"), claims over every task ("use this for any request"), references to
other tools ("better than read_file"), questions that mimic an agent's task,
or instructions hidden for the model. A card keeps a publisher sentence only
when it *describes this tool*, and keeps it whole (never a sentence with words
cut out of the middle, never part of a word):

- instructions, questions, keyword lists, stuffed sentences (a term three
  times), bare keyword runs (content words with no word that joins them),
  and sentences naming other tools' identifiers are dropped;
- a sentence must share a content word with the tool's identity — its name,
  its arguments' names, its server's name — so publisher text can elaborate
  what a tool is but not claim a topic its identity does not name;
- a sentence that adds nothing new over what is already kept is dropped;
- the whole is capped (:data:`MAX_SENTENCES`, :data:`MAX_WORDS`).

Every rule is about the *form* of the text, never about particular tools or
tasks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cartograph.cards.generators.phrasing import is_action_name
from cartograph.cards.generators.text import (
    FUNCTION_WORDS,
    has_cjk,
    is_instruction,
    plain_sentence,
    prose_sentences,
    readable_words,
    split_identifier,
    stem,
    tokens,
)

MAX_SENTENCES: Final = 3
MAX_WORDS: Final = 40
MIN_WORDS: Final = 3
STUFFED_REPEATS: Final = 3
KEYWORD_LIST_ITEMS: Final = 5
REDUNDANT_SHARE: Final = 0.75
STUFFED_DIVERSITY: Final = 0.6

# Words that say nothing about *which* tool: they neither admit a sentence
# through the topic check nor count as content.
GENERIC_WORDS: Final = FUNCTION_WORDS | frozenset(
    """get set data info information tool tools item items value values object objects thing
    things result results do does make use used using uses handle process manage api mcp server
    service new all any some one two not can will may might would could should which what when
    where how who you your we our us my they their them more most other others only also very
    just well via e g eg i ie etc see details detail here docs documentation link visit page
    return returns returned provide provides provided given specified specific based about
    allow allows way ways available support supports supported including include includes""".split()  # noqa: SIM905
)

_IDENTIFIER: Final = re.compile(
    r"(?<!\w)(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+)(?!\w)"
)
_KEYWORD_PREFIX: Final = re.compile(
    r"^\s*(keywords?|tags?|search\s+terms?|topics?|seo|categories|aliases)\s*:", re.IGNORECASE
)
_LIST_SPLIT: Final = re.compile(r"[,;|·•、，；]|\s+(?:and|or)\s+")
_LIST_LEAD: Final = re.compile(
    r"\s*(?:such\s+as|like|including|e\.g\.?|i\.e\.?|for\s+example)\s*$", re.IGNORECASE
)
_CLAUSE_END: Final = re.compile(r"[,;:，；：]\s|\s[-–—]\s")
_QUESTION: Final = re.compile(r"[?？]\s*$")
BARE_RUN_WORDS: Final = 4
LONG_BARE_RUN_WORDS: Final = 6


@dataclass(frozen=True)
class Topic:
    """What a tool is known as: the words publisher sentences must be about.

    ``names`` are identifiers a sentence may mention without "naming another
    tool": the tool's own name, its arguments and their enum values.
    """

    stems: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.stems


def topic(*identifiers: str, names: Iterable[str] = ()) -> Topic:
    """The topic of what is known by ``identifiers``; ``names`` are its own identifiers."""
    words = {w for i in identifiers for w in readable_words(i) + split_identifier(i)}
    content = {w for w in words if w not in GENERIC_WORDS and len(w) > 1}
    return Topic(
        stems=frozenset(stem(w) for w in content),
        words=frozenset(content),
        names=frozenset(n.lower() for n in names),
    )


def schema_names(schema: Mapping[str, Any]) -> list[str]:
    """Argument names and string enum values: identifiers a tool's own text may mention."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return []
    out: list[str] = []
    for name, prop in props.items():
        out.append(str(name))
        enum = prop.get("enum") if isinstance(prop, Mapping) else None
        if isinstance(enum, list):
            out += [v for v in enum if isinstance(v, str)]
    return out


@dataclass
class Selection:
    """Sentences kept so far, and the content words they (and the card) already say."""

    kept: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    words: int = 0


def publisher_sentences(
    text: str,
    about: Topic | None,
    *,
    seen: Iterable[str] = (),
    max_sentences: int = MAX_SENTENCES,
    max_words: int = MAX_WORDS,
    min_words: int = MIN_WORDS,
) -> list[str]:
    """Whole sanitised sentences of ``text`` that describe the tool ``about`` is.

    ``about=None`` skips the topic check (schema prose, which is not ranked).
    ``seen`` are words the card already says (its purpose sentence), so a
    sentence repeating only those is not kept. ``min_words`` is lower for
    parameter hints, which are short phrases ("City name").
    """
    chosen = Selection(seen={stem(w) for w in seen})
    for raw in prose_sentences(text):
        if len(chosen.kept) >= max_sentences or chosen.words >= max_words:
            break
        sentence = _acceptable(raw, about, min_words)
        if sentence is None:
            continue
        content = _content_stems(sentence)
        if chosen.kept and content and _redundant(content, chosen.seen):
            continue
        fitted = _fit(sentence, max_words - chosen.words)
        if fitted is None:
            continue
        chosen.kept.append(fitted + ("" if fitted[-1] in ".。" else "."))
        chosen.words += len(fitted.split())
        chosen.seen |= set(content)
    return chosen.kept


def _acceptable(raw: str, about: Topic | None, min_words: int = MIN_WORDS) -> str | None:
    """The sentence made plain, or ``None`` when a rule drops it whole."""
    if is_instruction(raw) or _QUESTION.search(raw) or _KEYWORD_PREFIX.search(raw):
        return None
    if _names_other_tool(raw, about) or _bare_run(raw):
        return None
    sentence = _collapse_repeats(plain_sentence(raw))
    if sentence and _keyword_list(sentence):
        sentence = _head_clause(sentence)
    if not sentence or _too_short(sentence, min_words) or _stuffed(sentence):
        return None
    checked = about is not None and not about.empty and not has_cjk(sentence)
    if checked and about is not None and not _on_topic(sentence, about):
        return None
    return sentence


def _names_other_tool(sentence: str, about: Topic | None) -> bool:
    """An identifier that reads as a tool ("read_file", "getStories") and is not this tool's."""
    own = about.names if about is not None else frozenset()
    return any(
        m.group(0).lower() not in own and is_action_name(m.group(0))
        for m in _IDENTIFIER.finditer(sentence)
    )


def _bare_run(sentence: str) -> bool:
    """Content words with nothing joining them ("weather forecast rain temperature city").

    Prose has function words ("the", "of", "for", "to") or is short; a run of
    four or more words with none, not begun as a sentence (lower-case), or of
    six or more however it begins, is a keyword run, not a description.
    """
    words = [w.strip(",.;:!()\"'").lower() for w in sentence.split()]
    words = [w for w in words if w]
    if has_cjk(sentence) or any(w in FUNCTION_WORDS for w in words):
        return False
    lower_start = sentence.lstrip()[:1].islower()
    return len(words) >= LONG_BARE_RUN_WORDS or (lower_start and len(words) >= BARE_RUN_WORDS)


def _collapse_repeats(sentence: str) -> str:
    """``time time now`` → ``time now``: an immediately repeated word is said once."""
    words = sentence.split()
    kept = [w for i, w in enumerate(words) if i == 0 or w.lower() != words[i - 1].lower()]
    return " ".join(kept)


def _too_short(sentence: str, min_words: int) -> bool:
    if has_cjk(sentence):
        return len(tokens(sentence)) < min_words + 1
    content = len(_content_stems(sentence))
    return len(sentence.split()) < min_words or content < min(2, min_words)


def _keyword_list(sentence: str) -> bool:
    """Five or more comma-separated items, nearly all of them one to three words long."""
    items = [i for i in _LIST_SPLIT.split(sentence) if i.strip()]
    if len(items) < KEYWORD_LIST_ITEMS:
        return False
    short = sum(1 for i in items if _short_item(i))
    return short >= 0.8 * len(items)


def _short_item(item: str) -> bool:
    return len(tokens(item)) <= 4 if has_cjk(item) else len(item.split()) <= 3


def _head_clause(sentence: str) -> str:
    """A keyword list collapsed to the clause before it ("Get BBC news, …" → "Get BBC news")."""
    head = _LIST_SPLIT.split(sentence, maxsplit=1)[0].strip()
    if head.count("(") > head.count(")"):
        head = head[: head.rindex("(")].rstrip()
    head = _LIST_LEAD.sub("", head).rstrip(" :")
    return "" if _keyword_list(head) else head


def _stuffed(sentence: str) -> bool:
    """A content word three times in a sentence that says little else is stuffing."""
    stems = _content_stems(sentence, unique=False)
    counts = Counter(stems)
    if not counts or max(counts.values()) < STUFFED_REPEATS:
        return False
    return len(counts) <= STUFFED_DIVERSITY * len(stems)


def _on_topic(sentence: str, about: Topic) -> bool:
    return any(_related(stem(w), about) for w in _content_words(sentence))


def _related(word: str, about: Topic) -> bool:
    """Same stem, or one word the start of the other ("diff"/"differences"), or one inside a
    compound ("thinking" in "sequentialthinking", "script" in "javascript")."""
    if word in about.stems:
        return True
    for known in about.stems:
        short, long = sorted((word, known), key=len)
        if len(short) >= 4 and long.startswith(short):
            return True
        if len(short) >= 5 and short in long:
            return True
    return False


def _redundant(content: list[str], seen: set[str]) -> bool:
    return sum(1 for c in content if c in seen) >= REDUNDANT_SHARE * len(content)


def _fit(sentence: str, budget: int) -> str | None:
    """``sentence`` if it fits ``budget`` words, else its longest whole-clause prefix that does."""
    words = sentence.split()
    if len(words) <= budget:
        return sentence
    best = None
    for match in _CLAUSE_END.finditer(sentence):
        head = sentence[: match.start()].rstrip()
        if len(head.split()) > budget:
            break
        best = head
    if best is None or len(best.split()) < MIN_WORDS + 1:
        return None
    if best.count("(") > best.count(")"):
        best = best[: best.rindex("(")].rstrip(" ,;:")
    return best if len(best.split()) > MIN_WORDS else None


def _content_words(sentence: str) -> list[str]:
    return [w for w in tokens(sentence) if w not in GENERIC_WORDS and len(w) > 2 and w.isalpha()]


def _content_stems(sentence: str, *, unique: bool = True) -> list[str]:
    stems = [stem(w) for w in _content_words(sentence)]
    return list(dict.fromkeys(stems)) if unique else stems
