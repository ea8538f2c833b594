"""Turning publisher text into safe, operator-owned fragments.

Publisher text is a *hint*: it may carry zero-width characters, instructions
aimed at the model ("ignore previous instructions", "always use this tool"),
links, marketing superlatives, or a poisoning payload. The helpers here keep
only descriptive content, restructure it, cap its length, and guarantee that
no run of :data:`COPY_RUN_WORDS` words is copied verbatim (``break_copied_runs``).
None of this is tuned to any benchmark: the rules are about the *form* of
publisher text, not about particular tools or queries.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final

COPY_RUN_WORDS: Final = 12

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN: Final = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_URL: Final = re.compile(r"(?:https?|ftp|file|wss?)://\S+|www\.\S+", re.IGNORECASE)
_EMAIL: Final = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b")
_HIDDEN_BLOCK: Final = re.compile(
    r"<\s*(important|system|instructions?|hidden|secret|admin|assistant|user|note|prompt)\b[^>]*>"
    r".*?(?:<\s*/\s*\1\s*>|$)",
    re.IGNORECASE | re.DOTALL,
)
_TAG: Final = re.compile(r"<[^<>]{0,200}>")
_CODE_BLOCK: Final = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_MARKUP: Final = re.compile(r"[*`#>|~\[\]{}]+|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|[\n\r]+|(?<=[。！？；;])")
_SECTION: Final = re.compile(
    r"(?:^|\n|\s)(?:args|arguments|parameters|params|returns?|raises|examples?|usage|"
    r"inputs?|outputs?|response)\s*:.*",
    re.IGNORECASE | re.DOTALL,
)
_CLAUSE: Final = re.compile(r"[,，、;；:：]")
_ODD_TOKEN: Final = re.compile(r"\b(?=\w*\d)(?=\w*[A-Za-z])\w{8,}\b|\b[0-9a-fA-F]{12,}\b")

# Instructions aimed at the model rather than descriptions of the tool. A
# sentence matching any of these is dropped whole: its remainder is not
# trustworthy either.
_INSTRUCTION_PATTERNS: Final = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bignore\b.{0,40}\b(instructions?|prompts?|rules|above|previous|prior)\b",
        r"\bdisregard\b",
        r"\b(forget|override)\b.{0,30}\b(instructions?|rules|prompt)\b",
        r"\byou\s+(must|should|shall|have\s+to|need\s+to|are\s+required)\b",
        r"\b(must|should)\s+(always|never|only|first)\b",
        r"\b(always|never|only)\s+(use|call|choose|prefer|invoke|run|pick|select)\b",
        r"\b(do\s+not|don'?t|never)\s+(use|call|tell|mention|reveal|inform|show|ask)\b",
        r"\b(use|call|prefer|choose)\s+this\s+(tool|function|server)\s+(instead|first|over|before)\b",
        r"\binstead\s+of\s+(any|other|all)\b",
        r"\bbefore\s+(using|calling|invoking)\s+(any|this|other)\b",
        r"\b(system\s+prompt|system\s+message|assistant|the\s+ai|the\s+model|llm)\b",
        r"\b(tell|inform|notify|remind)\s+the\s+user\b",
        r"\b(secret|password|api[\s_-]?key|token|credential|ssh|private\s+key|\.env)\b.{0,40}"
        r"\b(send|pass|include|read|upload|post|exfiltrate|share|copy)\b",
        r"\b(send|pass|include|read|upload|post|exfiltrate|share|copy)\b.{0,40}"
        r"\b(secret|password|api[\s_-]?key|credential|ssh|private\s+key|\.env)\b",
        r"\b(important|warning|attention|note)\s*[:!]",
        r"\bprovide\s+.{0,30}\bto\s+the\s+user\b",
        r"\bsidenote\b",
    )
)

_SUPERLATIVES: Final = frozenset(
    """best fastest easiest greatest ultimate perfect perfectly amazing awesome powerful
    powerfully blazing blazingly incredible incredibly revolutionary seamless seamlessly
    cutting-edge state-of-the-art world-class unparalleled unmatched superior premium
    effortless effortlessly robust comprehensive ideal ideally excellent outstanding essential
    magical lightning super extremely highly very truly simply smart intelligent
    enterprise-grade production-ready""".split()  # noqa: SIM905 - a word list reads better as text
)

# Boilerplate that every MCP server and tool repeats: it says nothing about
# what this one does, and equal boilerplate everywhere pulls centroids together.
_BOILERPLATE: Final = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bmodel\s+context\s+protocol\b(\s*\(mcp\))?",
        r"\b(an?|the|this)\s+mcp\s+(server|tool)s?\b",
        r"\bmcp\s+(server|tool|service)s?\b",
        r"\b(for|to)\s+(llms?|ai\s+agents?|ai\s+assistants?|agents?|claude|chatgpt)\b",
        r"\b(enables?|allows?|allowing|enabling|lets|letting|helps)\s+(llms?|ai\s+assistants?|ai\s+agents?|ai|agents?|users?|you|claude)\s+(to\s+)?",
        r"^\s*(this|the|a|an)\s+(tool|function|server|endpoint|method|api)\s+"
        r"(that\s+|which\s+|will\s+|can\s+|is\s+used\s+to\s+|is\s+able\s+to\s+|to\s+)?",
        r"^\s*(tool|function)\s+(to|that|for)\s+",
        r"^\s*(it|this)\s+(can|will|is\s+used\s+to)\s+",
        r"\bmcp\b",
    )
)

FUNCTION_WORDS: Final = frozenset(
    """a an the of to in on at by for with from into onto and or but as is are was were be been
    being it its this that these those which who whom whose than then there here so such
    also just both either each""".split()  # noqa: SIM905 - a word list reads better as text
)
_ARTICLES: Final = re.compile(r"\b(?:a|an|the)\s+", re.IGNORECASE)

_ABBREVIATIONS: Final = {
    "repo": "repository",
    "repos": "repositories",
    "info": "information",
    "msg": "message",
    "msgs": "messages",
    "doc": "document",
    "docs": "documents",
    "dir": "directory",
    "dirs": "directories",
    "db": "database",
    "img": "image",
    "imgs": "images",
    "config": "configuration",
    "params": "parameters",
    "param": "parameter",
    "stats": "statistics",
    "num": "number",
    "desc": "description",
    "addr": "address",
    "cfg": "configuration",
    "del": "delete",
    "ls": "list",
    "rm": "remove",
    "mkdir": "make directory",
    "pr": "pull request",
    "prs": "pull requests",
    "tz": "time zone",
    "qty": "quantity",
    "src": "source",
    "dst": "destination",
    "dest": "destination",
    "env": "environment",
}


def tokens(text: str) -> list[str]:
    """Words for the verbatim-copy check: Latin words lower-cased, CJK one per character."""
    return [m.group(0).lower() for m in _TOKEN.finditer(text)]


def ngrams(words: Sequence[str], n: int = COPY_RUN_WORDS) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def publisher_ngrams(texts: Iterable[str], n: int = COPY_RUN_WORDS) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for text in texts:
        grams |= ngrams(tokens(text), n)
    return grams


def longest_shared_run(text: str, publisher: Iterable[str]) -> int:
    """Length (in words) of the longest word run ``text`` shares with any publisher text."""
    mine = tokens(text)
    best = 0
    for other in publisher:
        theirs = tokens(other)
        best = max(best, _longest_common_run(mine, theirs))
    return best


def _longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def break_copied_runs(text: str, grams: set[tuple[str, ...]], n: int = COPY_RUN_WORDS) -> str:
    """Drop just enough words that no ``n``-word run of ``text`` is in ``grams``.

    In each offending run a function word nearest the middle goes first (else
    the middle word): one cut in the middle breaks the most overlapping runs,
    and dropping a function word keeps the meaning.
    """
    if not grams:
        return text
    spans = [(m.start(), m.end(), m.group(0).lower()) for m in _TOKEN.finditer(text)]
    kept = list(range(len(spans)))
    dropped: set[int] = set()
    while (window := _first_copied_window(kept, spans, grams, n)) is not None:
        middle = window[len(window) // 2]
        victim = min(window, key=lambda i: (spans[i][2] not in FUNCTION_WORDS, abs(i - middle)))
        dropped.add(victim)
        kept.remove(victim)
    if not dropped:
        return text
    out, last = [], 0
    for index in sorted(dropped):
        start, end, _ = spans[index]
        out.append(text[last:start])
        last = end
    out.append(text[last:])
    return _squash("".join(out))


def _first_copied_window(
    kept: list[int], spans: list[tuple[int, int, str]], grams: set[tuple[str, ...]], n: int
) -> list[int] | None:
    for start in range(len(kept) - n + 1):
        window = kept[start : start + n]
        if tuple(spans[i][2] for i in window) in grams:
            return window
    return None


def clean(text: str) -> str:
    """Unicode-normalise and strip invisible, control, markup and link content."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(_visible(ch) for ch in text)
    text = _join_wrapped_lines(text)
    text = _CODE_BLOCK.sub(" ", text)
    text = _HIDDEN_BLOCK.sub(" ", text)
    text = _TAG.sub(" ", text)
    text = _URL.sub(" ", text)
    text = _EMAIL.sub(" ", text)
    text = _MARKUP.sub(" ", text)
    return _squash(text)


def _join_wrapped_lines(text: str) -> str:
    """Re-join hard-wrapped prose; keep real breaks (blank lines, bullets, finished sentences)."""
    lines = text.split("\n")
    out = lines[0]
    for line in lines[1:]:
        stripped = line.strip()
        ends = out.rstrip()[-1:] in (".", "!", "?", ":", ";", "。", "！", "？", "")
        if ends or not stripped or re.match(r"[-*•+]|\d+[.)]", stripped):
            out += "\n" + line
        else:
            out += " " + stripped
    return out


def _visible(ch: str) -> str:
    if ch in "\n\r":
        return "\n"
    if ch == "\t":
        return " "
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf", "Co", "Cs", "Cn"):
        return ""
    if category.startswith("Z"):
        return " "
    return ch


def _squash(text: str) -> str:
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r"\s+([,.;:!?)])", r"\1", text)
    text = re.sub(r"([(])\s+", r"\1", text)
    text = re.sub(r"\(\s*[,;:]?\s*\)", "", text)
    text = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", text)
    return text.strip(" \t\n,;:-")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def is_instruction(sentence: str) -> bool:
    """True when a sentence addresses the model instead of describing the tool."""
    return any(p.search(sentence) for p in _INSTRUCTION_PATTERNS)


def describe_fragment(text: str, *, max_words: int) -> str:
    """A sanitised digest of publisher text: descriptive sentences only, capped."""
    kept: list[str] = []
    budget = max_words
    for sentence in sentences(_SECTION.sub("", clean(text))):
        if is_instruction(sentence):
            continue
        plain = _plain(sentence)
        if _has_cjk(plain):
            plain = _cjk_clauses(plain, COPY_RUN_WORDS - 1)
        words = plain.split()
        if len(words) < 2 and not _has_cjk(plain):
            continue
        if budget <= 0:
            break
        kept.append(" ".join(words[:budget]))
        budget -= len(words)
    return _squash("; ".join(kept))


def _plain(sentence: str) -> str:
    """Remove boilerplate, superlatives and identifier-like noise from one sentence."""
    for pattern in _BOILERPLATE:
        sentence = pattern.sub(" ", sentence)
    sentence = _ODD_TOKEN.sub(" ", sentence)
    sentence = _ARTICLES.sub("", sentence)
    words = [w for w in sentence.split() if w.lower().strip(",.;:!?()\"'") not in _SUPERLATIVES]
    text = _squash(" ".join(words)).rstrip(".。!！?？")
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    return text


def _cjk_clauses(text: str, limit: int) -> str:
    """Whole clauses of CJK text, at most ``limit`` characters-as-words in all.

    Each CJK character counts as a word for the copy check, so long CJK text is
    cut at clause boundaries instead of losing characters mid-word.
    """
    kept: list[str] = []
    used = 0
    for clause in _CLAUSE.split(text):
        size = len(tokens(clause))
        if not size:
            continue
        if used + size > limit:
            if not kept:
                kept.append("".join(tokens(clause)[:limit]))
            break
        kept.append(clause.strip())
        used += size
    return ", ".join(kept)


def _has_cjk(text: str) -> bool:
    return re.search(f"[{_CJK}]", text) is not None


def split_identifier(name: str) -> list[str]:
    """``getUserProfile`` / ``get_user-profile`` / ``HTTPRequest2`` → lower-case words."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w.lower() for w in re.split(r"[\s_\-./:]+", spaced) if w]


def readable_words(name: str) -> list[str]:
    """Identifier words with common abbreviations spelled out."""
    out: list[str] = []
    for word in split_identifier(name):
        out.extend(_ABBREVIATIONS.get(word, word).split())
    return out


def phrase(words: Sequence[str]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def cap_words(text: str, max_words: int) -> str:
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words])
