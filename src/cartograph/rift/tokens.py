"""Layer 3's vocabulary: the words a tool's card text is made of.

Token diagnosis is read by people ("these tools share *registry*, *host*"),
so tokens are shown as words, not stems. Two surface forms that differ only
by an English plural ("reference"/"references") are one token, though: else a
stray plural would count as a "distinguishing" word and hide a REGENERATE.
Identifiers are split (``get_xrefs_to`` → ``get xrefs to``) because card text
often quotes argument and tool names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from cartograph.names import cjk_bigrams, is_cjk, word_runs

# Function words carry no evidence about which tool a task wants; leaving them
# in would make "the" a shared token of every cluster.
_STOPWORD_TEXT: Final = """
    a about above after again all also an and any are as at be been being both but by can
    could did do does doing down during each either else for from further had has have having
    here how if in into is it its itself just may more most much must no nor not of off on
    once one only or other otherwise our out over own per same should so some such than that
    the their them then there these they this those through thus to too under until up upon
    use used uses using via was we were what when where whether which while who whom whose why
    will with within without would you your
"""
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())
_KEEP_ENDINGS: Final = ("ss", "us", "is", "ys", "as", "os")


def token_key(word: str) -> str:
    """The identity of a word for set algebra: lower-case, singular."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(_KEEP_ENDINGS):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-cased content words of ``text`` in order, stopwords and 1-letter words dropped.

    CJK text has no spaces; its runs become overlapping character bigrams, the
    usual dictionary-free unit (as in the index's lexical rankers). The
    splitting is :func:`cartograph.names.word_runs`, the index's tokeniser too.
    """
    found: list[str] = []
    for word in word_runs(text):
        if is_cjk(word):
            found.extend(cjk_bigrams(word))
        elif len(word) > 1 and word not in STOPWORDS:
            found.append(word)
    return found


class Vocabulary:
    """Maps token keys back to the first surface form seen, for display."""

    def __init__(self) -> None:
        self._surface: dict[str, str] = {}

    def tokens(self, text: str) -> frozenset[str]:
        """tok(t): the set of token keys in ``text``, remembering surface forms."""
        keys: set[str] = set()
        for word in words(text):
            key = token_key(word)
            self._surface.setdefault(key, word)
            keys.add(key)
        return frozenset(keys)

    def show(self, keys: Iterable[str]) -> tuple[str, ...]:
        """Surface forms of ``keys``, sorted, for reports."""
        return tuple(sorted(self._surface.get(key, key) for key in keys))


__all__ = ["STOPWORDS", "Vocabulary", "token_key", "words"]
