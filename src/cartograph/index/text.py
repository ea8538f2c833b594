"""Text normalisation shared by every lexical ranker.

Tool names are identifiers (``get_stock_price``, ``npmLatest``), task text is
prose in any language, so both go through one tokenizer: identifiers are
split into words, English words are lower-cased, stop-worded and lightly
stemmed, and CJK runs become overlapping character bigrams (the standard
dictionary-free way to index Chinese/Japanese text). Nothing here knows about
any particular catalog or benchmark.
"""

from __future__ import annotations

import functools
import re
from importlib.resources import files
from typing import Final

from cartograph.names import cjk_bigrams, is_cjk, word_runs

# Function words and request boilerplate ("please help me ..."): they carry no
# evidence about which tool fits, only noise for BM25 and Jaccard.
STOPWORDS: Final = frozenset(
    line.strip()
    for line in (files("cartograph.index") / "stopwords.txt").read_text("utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)

# Longest suffix first; the stem must keep at least four characters.
_SUFFIXES: Final = (
    ("ations", "ate"),
    ("ation", "ate"),
    ("ments", ""),
    ("ment", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ed", ""),
    ("es", "e"),
    ("s", ""),
)
_KEEP_ENDINGS: Final = ("ss", "us", "is", "ws", "ys")
_MIN_STEM: Final = 3
_MAX_WORD: Final = 30
# Long unbroken runs are opaque data (base64, hashes, tokens), not words.
_BLOB = re.compile(r"[A-Za-z0-9+/=_\-]{40,}")


def stem(word: str) -> str:
    """A light, conservative English stemmer: plurals, -ing, -ed, -ation, final e.

    Deliberately weaker than Porter: it only conflates forms whose meaning is
    the same for tool search ("charts"/"chart", "created"/"create"/"creating").
    """
    if not word.isalpha() or word.endswith(_KEEP_ENDINGS):
        return word
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            word = word[: -len(suffix)] + replacement
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2] != "l":
                word = word[:-1]  # "mapping" -> "map", "logged" -> "log"
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def tokenize(text: str) -> list[str]:
    """Search tokens for ``text``: split, lower-cased, stop-worded, stemmed, CJK bigrams."""
    tokens: list[str] = []
    for word in word_runs(_BLOB.sub(" ", text)):
        if is_cjk(word):
            tokens.extend(cjk_bigrams(word))
        else:
            token = _word_token(word)
            if token is not None:
                tokens.append(token)
    return tokens


@functools.lru_cache(maxsize=1 << 17)
def _word_token(word: str) -> str | None:
    """The token of one non-CJK word, or None for a stop word or a non-word.

    Memoised: an index build tokenizes every card field (seven BM25 fields and
    Jaccard), over a vocabulary that is tiny next to the word count; at 10k
    tools stemming the same words again was over half of the build (issue 12).
    """
    if 1 < len(word) <= _MAX_WORD and word not in STOPWORDS:
        return stem(word)
    return None
