"""Names and words: the one normaliser and the one tokeniser (P-NAME-1).

Everything that compares names (the config loader, the upstream federation,
Rift's name confusables) uses :func:`normalise_name`; everything that splits
text into words (the index's lexical rankers, Rift's token diagnosis) uses
:func:`word_runs`. Before this module there were two normalisers that
disagreed on ``/`` and ``:``; now one answer holds everywhere.

Two names that a person (or a model) would read as the same name must not
address two different things: ``get-file``, ``get_file``, ``getFile``,
``GET FILE``, ``get/file``, ``get:file`` and a full-width ``ｇｅｔ＿ｆｉｌｅ`` are
one name. ``/`` and ``:`` count as separators because MCP tool names use them
as namespace separators (``fs/read``, ``github:create_issue``), where they read
exactly like ``_`` or ``.``.

This is a root module: it imports nothing from Cartograph but the errors, so
every layer may use it.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Final

from cartograph import error_codes as codes
from cartograph.errors import NameCollisionError

PROXY_TOOL_NAMES: Final = frozenset({"discover", "status", "call"})
"""Cartograph's own tools: no upstream name may read like one of them."""

SEPARATORS: Final = re.compile(r"[\s\-_./:]+")
"""Characters that do not make a name different: whitespace, ``-``, ``_``, ``.``, ``/``, ``:``."""

_IDENTIFIER_SEPARATORS: Final = re.compile(r"[_\-./:]+")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_CJK_CHARS: Final = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_WORD: Final = re.compile(f"[{_CJK_CHARS}]+|[^\\W_{_CJK_CHARS}]+")
_CJK: Final = re.compile(f"[{_CJK_CHARS}]")


def normalise_name(name: str) -> str:
    """The comparison key of a name: NFKC, case-folded, separators removed.

    NFKC runs again after case-folding because folding can produce a
    compatibility character (and so a second spelling of one key).
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return SEPARATORS.sub("", folded)


@dataclass(frozen=True)
class NamedThing:
    """A name and where it came from, for messages (``"server 'git' (demo.toml)"``)."""

    name: str
    source: str


def find_collision(
    things: Iterable[NamedThing], *, reserved: Iterable[str] = PROXY_TOOL_NAMES
) -> tuple[NamedThing, NamedThing] | None:
    """The first pair that collides after normalisation, reserved names first in line."""
    seen: dict[str, NamedThing] = {
        normalise_name(word): NamedThing(word, f"Cartograph's proxy tool {word!r}")
        for word in reserved
    }
    for thing in things:
        key = normalise_name(thing.name)
        if key in seen:
            return seen[key], thing
        seen[key] = thing
    return None


def check_names(
    things: Iterable[NamedThing], *, reserved: Iterable[str] = PROXY_TOOL_NAMES
) -> None:
    """Raise :class:`NameCollisionError` naming both sources of the first collision."""
    pair = find_collision(things, reserved=reserved)
    if pair is None:
        return
    first, second = pair
    reserved_hit = first.source.startswith("Cartograph's proxy tool")
    raise NameCollisionError(
        f"{second.source} collides with {first.source} after normalisation "
        f"({normalise_name(second.name)!r}); rename one of them",
        code=codes.NAME_RESERVED if reserved_hit else codes.NAME_COLLISION,
        first=first.source,
        second=second.source,
    )


_BIDI_CONTROLS: Final = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e") | frozenset(
    "\u2066\u2067\u2068\u2069"
)


def invisible_characters(name: str) -> list[str]:
    """The characters of ``name`` a reader cannot see: format (Cf) and bidi controls.

    A zero-width space inside ``read\u200bfile`` makes a second name that
    reads as the first; a right-to-left override reorders what is shown. No
    tool name needs either, so a name that has them is not taken at its word.
    """
    return [c for c in name if unicodedata.category(c) == "Cf" or c in _BIDI_CONTROLS]


@functools.cache
def _confusable_classes() -> dict[str, str]:
    """Each character of Unicode's confusables table mapped to one member of its class.

    The table is UTS #39's ``confusables.txt`` as the maintained
    ``confusable_homoglyphs`` package ships it (character -> its look-alikes);
    classes are the connected groups of single-character pairs, each named by
    its smallest code point, so the mapping is deterministic.
    """
    import confusable_homoglyphs  # the data only: its lookup functions are not used

    data_file = resources.files(confusable_homoglyphs) / "confusables.json"
    table: dict[str, list[dict[str, str]]] = json.loads(data_file.read_text(encoding="utf-8"))
    parent: dict[str, str] = {}

    def root(char: str) -> str:
        while parent.setdefault(char, char) != char:
            parent[char] = parent[parent[char]]
            char = parent[char]
        return char

    for char, alikes in table.items():
        for alike in alikes:
            other = alike["c"]
            if len(char) == 1 and len(other) == 1:
                a, b = root(char), root(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return {char: root(char) for char in parent}


def skeleton(name: str) -> str:
    """What ``name`` looks like: names with one skeleton are read as one name.

    NFKC, invisible characters removed, each character replaced by its
    confusables class (before case-folding, since ``I`` and ``l`` look alike
    and ``i`` and ``l`` do not), case-folded, mapped once more, separators
    removed: ``get_fiIe``, ``get_file`` and ``get_fіle`` (Cyrillic і) share one.
    """
    classes = _confusable_classes()
    text = unicodedata.normalize("NFKC", name)
    hidden = set(invisible_characters(text))
    text = "".join(c for c in text if c not in hidden)
    text = "".join(classes.get(c, c) for c in text).casefold()
    return SEPARATORS.sub("", "".join(classes.get(c, c) for c in text))


def split_identifier(text: str) -> str:
    """``get_stockPrice-v2`` → ``get stock Price v2``: identifiers read as words."""
    return _IDENTIFIER_SEPARATORS.sub(" ", _CAMEL.sub(" ", text))


def word_runs(text: str) -> list[str]:
    """The tokeniser: lower-cased word runs of ``text`` in order, identifiers split.

    Text is NFKC-normalised first (full-width and ligature forms become plain
    letters), so ``ｇｅｔＦｉｌｅ`` and ``getFile`` give the same words. A run
    is letters and digits of any script, or a run of CJK characters (which
    have no spaces between words: see :func:`cjk_bigrams`). Stop words,
    stemming and length limits are the caller's policy — search stems, Rift's
    diagnosis shows whole words to people.
    """
    return _WORD.findall(split_identifier(unicodedata.normalize("NFKC", text)).lower())


def is_cjk(run: str) -> bool:
    """Whether a run from :func:`word_runs` is CJK text (to be cut into bigrams)."""
    return _CJK.match(run) is not None


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run: the usual dictionary-free unit."""
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


__all__ = [
    "PROXY_TOOL_NAMES",
    "SEPARATORS",
    "NamedThing",
    "check_names",
    "cjk_bigrams",
    "find_collision",
    "invisible_characters",
    "is_cjk",
    "normalise_name",
    "skeleton",
    "split_identifier",
    "word_runs",
]
