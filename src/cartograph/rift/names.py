"""Name-level confusables: tool names a model (or a person) can mix up.

Embeddings see card text, but agents also see and type tool *names*. Three
kinds of collision are reported:

* ``same-name`` — the identical name on different servers;
* ``normalised`` — equal after Unicode NFKC, case-folding and removing
  separators (``send_email`` / ``sendEmail`` / ``send-email``);
* ``lookalike`` — equal only after mapping look-alike characters to one
  representative (Cyrillic ``о`` / Latin ``o``, ``0``/``O``, ``1``/``l``/``I``,
  ``rn``/``m``): a homoglyph that NFKC leaves alone.

The look-alike table is a curated subset of Unicode TR39's confusables for
the Latin letters that identifiers use: Cyrillic, Greek and Armenian
homoglyphs plus the ASCII digit/letter pairs. NFKC already folds full-width and
compatibility forms. A full TR39 skeleton would flag far more pairs in
identifiers than anyone can act on.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Final, Literal

from cartograph.names import SEPARATORS, normalise_name
from cartograph.rift.model import NameConfusable, ToolRef

_LOOKALIKE_SOURCE: Final = {
    "a": "аɑα",
    "b": "Ьḃ",
    "c": "сϲⅽ",
    "d": "ԁⅾ",
    "e": "еєҽ",
    "g": "ɡ",
    "h": "һ",
    "i": "іιɩӏ",
    "j": "јϳ",
    "k": "κк",
    "l": "1|Iǀ",
    "m": "м",
    "n": "ո",
    "o": "0оοօσ",
    "p": "рρ",
    "q": "ԛ",
    "s": "ѕ",
    "t": "т",
    "u": "υս",
    "v": "νѵ",
    "w": "ԝѡ",
    "x": "хχ",
    "y": "уγ",
    "A": "АΑ",
    "B": "ВΒ",
    "C": "СϹ",
    "E": "ЕΕ",
    "H": "НΗ",
    "K": "КΚ",
    "M": "МΜ",
    "N": "Ν",
    "O": "ОΟ",
    "P": "РΡ",
    "S": "Ѕ",
    "T": "ТΤ",
    "X": "ХΧ",
    "Y": "ΥҮ",
    "Z": "Ζ",
}
_LOOKALIKE: Final = str.maketrans(
    {ch: target for target, chars in _LOOKALIKE_SOURCE.items() for ch in chars}
)
_MULTI: Final = (("rn", "m"), ("vv", "w"))


def skeletons(name: str) -> set[str]:
    """Look-alike keys of ``name``: before and after case-folding.

    Mapping before case-folding keeps ``I``/``l`` together (they look alike,
    ``i``/``l`` do not); mapping after it catches an all-caps twin as well.
    """
    nfkc = unicodedata.normalize("NFKC", name)
    return {_skeleton(nfkc), _skeleton(nfkc.casefold())}


def _skeleton(text: str) -> str:
    mapped = text.translate(_LOOKALIKE)
    mapped = SEPARATORS.sub("", unicodedata.normalize("NFKC", mapped).casefold())
    for pair, single in _MULTI:
        mapped = mapped.replace(pair, single)
    return mapped


def name_confusables(tools: Iterable[ToolRef]) -> list[NameConfusable]:
    """Every group of two or more tools whose names collide, most severe first."""
    refs = sorted(set(tools), key=lambda r: (r.tool, r.server))
    parent = list(range(len(refs)))
    first_with: dict[str, int] = {}
    for index, ref in enumerate(refs):
        keys = {"n:" + normalise_name(ref.tool)} | {"s:" + s for s in skeletons(ref.tool)}
        for key in keys:
            other = first_with.setdefault(key, index)
            _union(parent, index, other)
    groups: dict[int, list[ToolRef]] = {}
    for index, ref in enumerate(refs):
        groups.setdefault(_find(parent, index), []).append(ref)
    found = [_describe(members) for members in groups.values() if len(members) >= 2]
    severity = {"lookalike": 0, "normalised": 1, "same-name": 2}
    return sorted(found, key=lambda c: (severity[c.kind], c.scope != "within-server", c.key))


def _describe(members: list[ToolRef]) -> NameConfusable:
    names = {m.tool for m in members}
    kind: Literal["same-name", "normalised", "lookalike"]
    servers = {m.server for m in members}
    if len(names) == 1:
        kind = "same-name"
    elif len({normalise_name(n) for n in names}) == 1:
        kind = "normalised"
    else:
        kind = "lookalike"
    # A group is within-server when some server holds two of its names.
    within = len(servers) < len(members)
    return NameConfusable(
        kind=kind,
        scope="within-server" if within else "cross-server",
        key=normalise_name(members[0].tool),
        members=tuple(members),
    )


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _union(parent: list[int], a: int, b: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)


__all__ = ["name_confusables", "skeletons"]
