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
from collections.abc import Iterable, Sequence
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


SKELETON_SUPPLEMENT: Final = (
    ("0", "o"),
    ("vv", "w"),
)
"""Look-alike pairs Unicode's confusables table does not list: the only hand-written part.

* ``0`` / ``o``: UTS #39 lists the digit zero with the capital ``O`` only, so
  ``l0g`` and ``log`` would keep two skeletons; in the fonts tool names are read
  in (monospace, sans) a zero and a lower-case o differ by a few pixels.
* ``vv`` / ``w``: the table lists ``rn`` for ``m`` but no sequence for ``w``;
  two v's set tight read as one w in the same fonts.

Each pair is applied after the table's own mapping, to its mapped form.
"""


def _data_table() -> dict[str, list[dict[str, str]]]:
    import confusable_homoglyphs  # the data only: its lookup functions are not used

    data_file = resources.files(confusable_homoglyphs) / "confusables.json"
    table: dict[str, list[dict[str, str]]] = json.loads(data_file.read_text(encoding="utf-8"))
    return table


@functools.cache
def _confusable_classes() -> dict[str, str]:
    """Each character of Unicode's confusables table mapped to one member of its class.

    The table is UTS #39's ``confusables.txt`` as the maintained
    ``confusable_homoglyphs`` package ships it (character -> its look-alikes);
    classes are the connected groups of single-character pairs, each named by
    its smallest code point, so the mapping is deterministic.
    """
    parent: dict[str, str] = {}

    def root(char: str) -> str:
        while parent.setdefault(char, char) != char:
            parent[char] = parent[parent[char]]
            char = parent[char]
        return char

    for char, alikes in _data_table().items():
        for alike in alikes:
            other = alike["c"]
            if len(char) == 1 and len(other) == 1:
                a, b = root(char), root(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return {char: root(char) for char in parent}


@functools.cache
def _sequences() -> dict[str, str]:
    """Characters the table says look like a run of ASCII letters: ``m`` is ``rn``, ``æ`` ``ae``.

    Keyed by the character's class (after :func:`_confusable_classes`), valued by
    the run's mapped form; where one character has several runs the smallest is
    kept, so the mapping is deterministic.
    """
    found: dict[str, str] = {}
    for char, alikes in _data_table().items():
        for alike in alikes:
            for one, run in ((char, alike["c"]), (alike["c"], char)):
                if len(one) == 1 and len(run) > 1 and run.isascii() and run.isalnum():
                    key, value = _mapped(one), _mapped(run)
                    # NFKC and case-folding already spell ligatures (ﬁ) out.
                    if len(key) == 1 and (key not in found or value < found[key]):
                        found[key] = value
    # A run may hold such a character itself (🝫 is "MB"): spell it out too.
    return {key: "".join(found.get(c, c) for c in run) for key, run in found.items()}


def _mapped(text: str) -> str:
    """The table's single-character mapping, before and after case-folding.

    Before, since ``I`` and ``l`` look alike and ``i`` and ``l`` do not; after,
    for what case-folding produces.
    """
    classes = _confusable_classes()
    text = "".join(classes.get(c, c) for c in text).casefold()
    return "".join(classes.get(c, c) for c in text)


@functools.cache
def _supplement() -> tuple[tuple[str, str], ...]:
    return tuple((_mapped(a), _mapped(b)) for a, b in SKELETON_SUPPLEMENT)


@functools.lru_cache(maxsize=1 << 18)
def skeleton(name: str) -> str:
    """What ``name`` looks like: names with one skeleton are read as one name (UTS #39).

    NFKC; invisible characters removed; each character replaced by its
    confusables class, before and after case-folding (:func:`_mapped`); each
    character the table reads as a run of letters replaced by that run
    (``m`` → ``rn``); the :data:`SKELETON_SUPPLEMENT` pairs; separators
    removed. ``get_fiIe``, ``get_file``, ``get_fіle`` (Cyrillic і),
    ``get_f\u200bile`` and ``get_fi1e`` share one; so do ``l0g`` and ``log``.

    Memoised: an index rebuild reads every name of the federation two or three
    times (imitations, name copies now and in the last snapshot), ~10 µs each.
    """
    text = unicodedata.normalize("NFKC", name)
    hidden = set(invisible_characters(text))
    text = _mapped("".join(c for c in text if c not in hidden))
    sequences = _sequences()
    text = "".join(sequences.get(c, c) for c in text)
    for alike, same in _supplement():
        text = text.replace(alike, same)
    return SEPARATORS.sub("", text)


def one_name_groups(names: Sequence[str]) -> list[list[int]]:
    """Positions of ``names`` that are one name, in groups of two or more (each sorted).

    One name: equal after :func:`normalise_name`, or the same :func:`skeleton`,
    linked transitively (``rn`` ~ ``m`` by skeleton and ``m`` ~ ``M`` by
    normalisation put all three in one group). Rift's name findings and the
    index's name copies group by this one rule, so the two always agree.
    """
    parent = list(range(len(names)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_with: dict[str, int] = {}
    for index, name in enumerate(names):
        for key in ("n:" + normalise_name(name), "s:" + skeleton(name)):
            root, other = find(index), find(first_with.setdefault(key, index))
            if root != other:
                parent[max(root, other)] = min(root, other)
    groups: dict[int, list[int]] = {}
    for index in range(len(names)):
        groups.setdefault(find(index), []).append(index)
    return [members for members in groups.values() if len(members) >= 2]


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
    "SKELETON_SUPPLEMENT",
    "NamedThing",
    "check_names",
    "cjk_bigrams",
    "find_collision",
    "invisible_characters",
    "is_cjk",
    "normalise_name",
    "one_name_groups",
    "skeleton",
    "split_identifier",
    "word_runs",
]
