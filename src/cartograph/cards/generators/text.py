"""Character- and word-level helpers shared by the generators.

Publisher text is untrusted: it may carry zero-width or tag characters,
look-alike letters from other scripts, markup, links, or instructions aimed at
the model. :func:`clean` removes what a reader cannot see and what is not
prose; :func:`is_instruction` recognises sentences addressed to the model.
Which *sentences* of publisher text a card keeps is decided in
:mod:`.publisher`. Nothing here ever deletes part of a word: text is kept or
dropped a whole word (and mostly a whole sentence) at a time, so a card never
shows a mangled token such as ``America/_York``. None of this is tuned to any
benchmark: the rules are about the *form* of publisher text, not about
particular tools or queries.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Final

from cartograph import names

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
# Markup characters, never inside a word: "C#" and "New_York" keep theirs.
_MARKUP: Final = re.compile(r"[*`>|~\[\]{}]+|(?<!\w)#+|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")
# A sentence ends at . ! ? (not after "e.g.", "i.e.", "etc.", "vs.") or a line break.
_SENTENCE_END: Final = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<=[.!?])\s+|[\n\r]+|(?<=[。！？；;])",
    re.IGNORECASE,
)
_SECTION: Final = re.compile(
    r"(?:^|\n|\s)(?:args|arguments|parameters|params|returns?|raises|examples?|usage|"
    r"inputs?|outputs?|(?:error\s+)?responses?|errors?)\s*:.*",
    re.IGNORECASE | re.DOTALL,
)
_CLAUSE: Final = re.compile(r"[,，、;；:：]")
# Opaque identifiers (hashes, keys, canaries): whole tokens only, never a piece of one.
_ODD_TOKEN: Final = re.compile(
    r"(?<![\w/.\-:+])(?:(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{8,}|[0-9a-fA-F]{12,})"
    r"(?![\w/\-:+]|\.\w)"
)

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
        r"\blet\s+the\s+user\s+know\b",
        r"\b(now\s+you\s+can|you\s+can\s+now|you\s+now\s+have)\b",
        r"\b(secret|password|api[\s_-]?key|token|credential|ssh|private\s+key|\.env)\b.{0,40}"
        r"\b(send|pass|include|read|upload|post|exfiltrate|share|copy)\b",
        r"\b(send|pass|include|read|upload|post|exfiltrate|share|copy)\b.{0,40}"
        r"\b(secret|password|api[\s_-]?key|credential|ssh|private\s+key|\.env)\b",
        r"\b(important|warning|attention|note)\s*[:!]",
        r"\bprovide\s+.{0,30}\bto\s+the\s+user\b",
        r"\bsidenote\b",
        # Claims over other tools or every task: steering, not description.
        r"\b(for|with|in)\s+(every|any|all|each)\s+(tasks?|requests?|questions?|queries|"
        r"purposes?|situations?|jobs?|needs?|prompts?)\b",
        r"\b(every|any|all)\s+(tasks?|requests?|questions?)\b.{0,30}\b(use|call|pick)\b",
        r"\b(use|call|pick|choose|prefer|try)\s+(this|me|it)\b.{0,20}\b(first|always|"
        r"instead|everything|anything)\b",
        r"\b(better|faster|more\s+accurate)\s+than\b",
        r"\b(replaces?|supersedes?|deprecates?)\s+(the\s+)?(other|all|any|\w+[_/]\w+)",
        r"\binstead\s+of\s+(the\s+)?(\w+[_/]\w+|other|any|all)\b",
        r"\bno\s+(other|need\s+for\s+other)\s+tools?\b",
        r"\b(in|to|from)\s+your\s+(instructions|prompts?|responses?|answers?|context)\b",
        r"\b(use|call|run|invoke)\s+(the\s+)?['\"]?[\w-]+['\"]?\s+(tool|function)\s+first\b",
        r"\bprerequisite\s*:",
        r"\b(the\s+)?only\s+tool\s+you\b",
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
        r"\b(an?|the|this)\s+mcp\s+(server|tool)s?\b(?!['’])",
        r"\bmcp\s+(server|tool|service)s?\b(?!['’])",
        r"\b(for|to)\s+(llms?|ai\s+agents?|ai\s+assistants?|agents?|claude|chatgpt)\b",
        r"\b(enables?|allows?|allowing|enabling|lets|letting|helps)\s+(llms?|ai\s+assistants?|ai\s+agents?|ai|agents?|users?|you|claude)\s+(to\s+)?",
        r"^\s*(this|the|a|an)\s+(tool|function|server|endpoint|method|api)\s+"
        r"(that\s+|which\s+|will\s+|can\s+|is\s+used\s+to\s+|is\s+able\s+to\s+|to\s+)?",
        r"^\s*(tool|function)\s+(to|that|for)\s+",
        r"^\s*(it|this)\s+(can|will|is\s+used\s+to)\s+",
        r"(?<![\w/.-])mcp(?![\w'’/.-])",
    )
)

FUNCTION_WORDS: Final = frozenset(
    """a an the of to in on at by for with from into onto and or but as is are was were be been
    being it its this that these those which who whom whose than then there here so such
    also just both either each""".split()  # noqa: SIM905 - a word list reads better as text
)

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
    """Lower-cased words: Latin runs whole, CJK one character each."""
    return [m.group(0).lower() for m in _TOKEN.finditer(text)]


def clean(text: str) -> str:
    """Unicode-normalise and strip invisible, control, markup and link content.

    Look-alike letters inside Latin words are folded first (:func:`fold_confusables`),
    so an instruction spelled with a Cyrillic "і" is still recognised as one.
    """
    text = unicodedata.normalize("NFKC", text)
    text = "".join(_visible(ch) for ch in text)
    text = fold_confusables(text)
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
    text = re.sub(r"\s+([,.;:!?)])(?=\s|$)", r"\1", text)
    text = re.sub(r"([(])\s+", r"\1", text)
    text = re.sub(r"\(\s*[,;:]?\s*\)", "", text)
    text = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", text)
    return text.strip(" \t\n,;:-")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def prose_sentences(text: str) -> list[str]:
    """The sentences of cleaned ``text``, without docstring sections (``Args:``, ``Returns:`` …)."""
    return sentences(_SECTION.sub("", clean(text)))


def is_instruction(sentence: str) -> bool:
    """True when a sentence addresses the model instead of describing the tool."""
    return any(p.search(sentence) for p in _INSTRUCTION_PATTERNS)


def plain_sentence(sentence: str) -> str:
    """Remove boilerplate, superlatives and identifier-like noise from one sentence."""
    for pattern in _BOILERPLATE:
        sentence = pattern.sub(" ", sentence)
    sentence = _ODD_TOKEN.sub(" ", sentence)
    words = [w for w in sentence.split() if w.lower().strip(",.;:!?()\"'") not in _SUPERLATIVES]
    text = _squash(" ".join(words)).rstrip(".。!！?？")
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    return text


# Latin look-alikes from Cyrillic and Greek. A word that mixes them with Latin
# letters is spelled to evade a filter or to impersonate: it is read as Latin.
_CONFUSABLES: Final = str.maketrans(
    "аеорсухіјѕԁӏһԛԝАВЕКМНОРСТХУІЈЅαονιυκΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdlhqwABEKMHOPCTXYIJSaoviukABEZHIKMNOPTYX",
)
_CONFUSABLE_CHARS: Final = frozenset("аеорсухіјѕԁӏһԛԝАВЕКМНОРСТХУІЈЅαονιυκΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")
_WORD: Final = re.compile(r"\w+")


def is_mixed_script(word: str) -> bool:
    """True for a word that mixes ASCII letters with Cyrillic/Greek look-alikes."""
    return any(c in _CONFUSABLE_CHARS for c in word) and any("a" <= c.lower() <= "z" for c in word)


def fold_confusables(text: str) -> str:
    """Spell mixed-script words in Latin letters; words wholly in one script are left alone."""
    return _WORD.sub(
        lambda m: m.group(0).translate(_CONFUSABLES) if is_mixed_script(m.group(0)) else m.group(0),
        text,
    )


def stem(word: str) -> str:
    """A light English stem for matching words (plural, -ing, -ed, final e); never displayed."""
    word = word.lower()
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            break
    else:
        if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
            word = word[:-1]
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def has_cjk(text: str) -> bool:
    return re.search(f"[{_CJK}]", text) is not None


def split_identifier(name: str) -> list[str]:
    """``getUserProfile`` / ``get_user-profile`` / ``HTTPRequest2`` → lower-case words."""
    return names.split_identifier(name).lower().split()


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
