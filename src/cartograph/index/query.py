"""Multi-step task handling: split a task into the steps it names.

Agents arrive with whole tasks ("find X, chart it, save it as PDF"), and the
tools a task needs are one per step. Ranking the whole sentence lets the
loudest step win all k slots; ranking each step as well lets every step put
its best tool forward. The split is purely syntactic (sentence punctuation,
list commas, sequencing conjunctions) so it works on any catalog and any
English/CJK task text; it never looks for particular words of a domain.

Literal values in a task (file paths, URLs, domains) say which *kind* of
argument a step will fill, so they are turned into the words a schema uses
for such an argument ("file path", "url"), and removed from the text so that
their fragments ("root", "www") do not look like evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cartograph.index.text import tokenize

MIN_CLAUSE_TOKENS: Final = 2
MAX_CLAUSES: Final = 8

_URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+", re.IGNORECASE)
_PATH = re.compile(
    r"(?<![\w/])(?:~|[A-Za-z]:)?(?:/[\w.\-~]+){2,}/?|\b[\w\-]+\.(?:[a-z]{2,5})\b(?=\s|$|[,;:!?)])"
)
_DOMAIN = re.compile(
    r"\b[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.(?:com|org|net|io|dev|ai|cn|gov|edu)\b", re.I
)
_SENTENCE = re.compile(r"(?<=[.?!])\s+|[;\n。？！；]+")
_STEP = re.compile(
    r",?\s+(?:and\s+)?then\s+|,\s*and\s+|,\s+|\s+and\s+(?=\w)|\s+after\s+that\s+|[，、]",
    re.IGNORECASE,
)

# Negation: a cue, then the first content word after it within the same phrase
# ("changes that aren't staged yet": "staged"). Such a word is not evidence for
# a tool about it, so it is left out of the lexical tokens (the dense view reads
# the sentence whole). One word, not a phrase: "I do not know the time in Tokyo"
# must keep "time". "no" before a number or a full stop abbreviates "number".
_NEGATION = re.compile(
    r"\b(?:not|never|without|unless|except|excluding|nor)\b|\b\w+n[’']t\b"
    r"|\bno\b(?![\s.]*\d|\.)",
    re.IGNORECASE,
)
_WORD_AFTER = re.compile(r"\s+([\w\-]+)")
_PHRASE_END = frozenset({"and", "but", "or", "then", "so"})

LITERAL_WORDS: Final = {"url": "url web page link", "path": "file path", "domain": "domain website"}


@dataclass(frozen=True, slots=True)
class Clause:
    """One step of a task: its text (literals replaced), search tokens, and span.

    ``start``/``end`` locate the step in :attr:`ParsedQuery.text`, so an
    embedder can pool the step's vector from the whole task's token vectors
    instead of running the model once more (see ``QueryContext``).
    """

    text: str
    tokens: tuple[str, ...]
    start: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A task as the rankers see it: the whole text plus its steps."""

    text: str
    tokens: tuple[str, ...]
    clauses: tuple[Clause, ...]


def parse_query(task: str) -> ParsedQuery:
    """Normalise literals and split ``task`` into steps (always at least one)."""
    text = replace_literals(task.strip())
    spans = [p for s, e in _split(_SENTENCE, text, 0, len(text)) for p in _split(_STEP, text, s, e)]
    clauses = _merge_short([Clause(text[s:e], query_tokens(text[s:e]), s, e) for s, e in spans])
    whole = Clause(text, query_tokens(text), 0, len(text))
    if not clauses:
        clauses = [whole]
    return ParsedQuery(text=text, tokens=whole.tokens, clauses=tuple(clauses[:MAX_CLAUSES]))


def query_tokens(text: str) -> tuple[str, ...]:
    """The lexical tokens of a task's text: :func:`tokenize` without negated words."""
    return tuple(tokenize(without_negated(text)))


def without_negated(text: str) -> str:
    """``text`` with each negation cue and the first content word in its scope blanked."""
    cut: list[tuple[int, int]] = []
    for cue in _NEGATION.finditer(text):
        at = cue.end()
        while (word := _WORD_AFTER.match(text, at)) is not None:
            if word.group(1).lower() in _PHRASE_END:
                break
            at = word.end()
            if tokenize(word.group(1)):  # the first content word: negated
                cut.append((cue.start(), at))
                break
    for start, end in reversed(cut):
        text = text[:start] + " " + text[end:]
    return text


def _split(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``pattern.split`` of ``text[start:end]`` as stripped, non-empty (start, end) spans."""
    cuts = [(m.start(), m.end()) for m in pattern.finditer(text, start, end) if m.end() > m.start()]
    bounds = zip([start, *(b for _, b in cuts)], [*(a for a, _ in cuts), end], strict=True)
    spans: list[tuple[int, int]] = []
    for a, b in bounds:
        piece = text[a:b]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((a + lead, a + len(piece.rstrip())))
    return spans


def replace_literals(text: str) -> str:
    """Swap URLs, paths and domains for the words a schema uses for them."""
    text = _URL.sub(f" {LITERAL_WORDS['url']} ", text)
    text = _DOMAIN.sub(f" {LITERAL_WORDS['domain']} ", text)
    return _PATH.sub(lambda m: f" {LITERAL_WORDS['path']} {_extension(m.group())} ", text)


def _extension(literal: str) -> str:
    """A file's extension is a format name ("pdf", "xlsx"): keep it as a word."""
    last = literal.rstrip("/.").rsplit("/", 1)[-1]
    return last.rsplit(".", 1)[1] if "." in last else ""


def _merge_short(clauses: list[Clause]) -> list[Clause]:
    """Fold fragments too short to be a step ("Beijing", "it") into their neighbour."""
    merged: list[Clause] = []
    for clause in clauses:
        if merged and min(len(clause.tokens), len(merged[-1].tokens)) < MIN_CLAUSE_TOKENS:
            prev = merged.pop()
            clause = Clause(
                f"{prev.text} {clause.text}", prev.tokens + clause.tokens, prev.start, clause.end
            )
        merged.append(clause)
    return [c for c in merged if c.tokens]
