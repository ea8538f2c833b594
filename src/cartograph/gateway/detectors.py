"""The secret detectors: detect-secrets' format plugins, compiled once, behind a literal prefilter.

The rule set is Yelp's ``detect-secrets`` (its README lists the plugins): every
plugin that recognises a credential by its own *format* (an ``AKIA…`` key id, a
``BEGIN … PRIVATE KEY`` header, ``ghp_…``, ``xoxb-…``, a URL carrying a
password, a formally valid JWT) is used as the library ships it, its regular
expressions read from the plugin class, never copied here. Left out, on purpose:

* the entropy plugins (``Base64HighEntropyString``, ``HexHighEntropyString``): a
  commit hash, a UUID or a checksum in a tool's result is not a secret;
* ``KeywordDetector``, and every expression the library builds with
  ``RegexBasedDetector.build_assignment_regex`` (``cloudant_password = "…"``,
  ``ibm_cos_secret_key: …``; all of IBM's two plugins, half of Cloudant's and
  SoftLayer's): they recognise a value by the *name* it is assigned to in source
  code, which refuses every login form's arguments, and each walks a 10 KB text
  in 1-3 ms;
* ``IPPublicDetector``: a public address is not a credential.

Run as the library runs them, the expressions cost about 7 ms over a 10 KB
result: each walks the whole text. So each gets two screens, both derived from its
own parse tree, both necessary conditions of a match, so that a screened rule finds
exactly what its expression finds (``tests/gateway/test_secret_detectors.py`` compares
the two over a corpus):

* a *prefilter*: groups of literals, one of each group present in any text the
  expression can match (``AKC`` for Artifactory's ``(?:\\s|=|:|"|^)AKC[a-zA-Z0-9]{10,}…``).
  An expression runs only on a text that holds one literal of each of its groups,
  which a result of ordinary text rarely does. The literals are as written, looked
  for in the text itself, for an expression that minds case (most: ``AKIA``, ``ghp_``,
  ``eyJ``), and lower-cased, looked for in the lower-cased text, for one that ignores
  it. The derivation is conservative: what it cannot spell out (a long character
  class, an optional part) asks for nothing. On ASCII text a prefilter never skips
  a text its expression would match (checked against strings generated from each
  expression); what it may miss is a match that uses a non-ASCII character for an
  ASCII one (an Arabic-Indic digit for ``\\d``, ``ſ`` for a case-blind ``s``), and the
  credentials these formats describe are ASCII;
* a *screen*, for an expression whose literal comes after a part that can start
  anywhere (Telegram's ``\\d{8,10}:[0-9A-Za-z_-]{35}``, Discord's ``[MNO]…\\.…``): the
  expression from that literal on (``:[0-9A-Za-z_-]{35}``), which the regex engine
  looks for by jumping from one ``:`` to the next instead of trying every position.
  Any match of the expression holds a match of its tail, so where the screen finds
  nothing the expression cannot either.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import product
from re import _compiler as sre_compile  # type: ignore[attr-defined]  # compiles a parse tree
from re import _constants as sre  # type: ignore[attr-defined]  # the parser's opcodes
from re import _parser as sre_parse  # type: ignore[attr-defined]  # not the deprecated sre_parse
from typing import Any, Final, cast

EXCLUDED_PLUGINS: Final = frozenset(
    {
        "Base64HighEntropyString",
        "HexHighEntropyString",
        "KeywordDetector",
        "IPPublicDetector",
    }
)
"""detect-secrets plugins the scan does not use (the module docstring says why)."""

_BACK_REFERENCES: Final = frozenset(
    op
    for op in (sre.GROUPREF, sre.GROUPREF_EXISTS, getattr(sre, "GROUPREF_IGNORE", None))
    if op is not None
)

MAX_EXACT: Final = 64
"""The most alternatives a prefilter spells out (``AP[0-9A-F]`` is 16) before it stops."""
MAX_CLASS: Final = 16
"""A character class of at most this many characters is spelt out as literals."""

Exact = frozenset[str] | None
"""Every string a part of an expression can match, when they are few; None: too many."""
Needs = tuple[frozenset[str], ...]
"""Groups of literals: a text the part can match holds one literal of each group."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One expression of one plugin: what it finds, how, and when it is worth running."""

    kind: str
    """The plugin's ``secret_type`` (``AWS Access Key``): what audit records and markers say."""
    pattern: re.Pattern[str]
    needs: Needs
    """Literal groups the text must hold (see the module docstring); () runs always."""
    confirm: Callable[[str], bool] | None = None
    """The plugin's own second look (a JWT must decode), when it has one."""
    screen: re.Pattern[str] | None = None
    """The expression's tail from its first literal on, looked for first (module docstring)."""

    @property
    def folded(self) -> bool:
        """Whether the expression ignores case: its literals are lower-cased, and looked for
        in the lower-cased text."""
        return bool(self.pattern.flags & re.IGNORECASE)

    def admits(self, text: str) -> bool:
        """Whether ``text`` could hold a match, by the prefilter (module docstring)."""
        haystack = text.lower() if self.folded else text
        return all(any(literal in haystack for literal in group) for group in self.needs)

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Where the secret part of each match lies: its groups when it has them, else all of it.

        ``BasicAuthDetector`` captures the password of ``://user:password@``; the
        user and host are no secret, so only the password is reported.
        """
        if self.screen is not None and self.screen.search(text) is None:
            return
        for match in self.pattern.finditer(text):
            if self.confirm is not None and not self.confirm(match.group()):
                continue
            groups = [i for i in range(1, (self.pattern.groups or 0) + 1) if match.group(i)]
            if not groups:
                yield match.span()
            for index in groups:
                yield match.span(index)


class Detectors:
    """Every rule, and one pass over a text with all of them."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        # Each rule is screened by its most telling group; each distinct literal is looked
        # for once per text, and literals that share their first two characters only once
        # the prefix they all share is there (``AP0``…``APF`` after ``AP``, the ``BEGIN …
        # PRIVATE KEY`` headers after ``BEGIN ``): a literal not in a 10 KB text costs a
        # full pass of it, so the fewer looked for, the better, and the longer the cheaper
        # (the search skips ahead by the needle's length). A literal is keyed with whether
        # it is looked for in the lower-cased text.
        self._keys = tuple(
            (rule, {(rule.folded, lit) for lit in group} if group is not None else None)
            for rule in self.rules
            for group in [_telling(rule.needs)]
        )
        by_head: dict[tuple[bool, str], set[str]] = {}
        for _rule, keyed in self._keys:
            for folded, literal in keyed or ():
                by_head.setdefault((folded, literal[:2]), set()).add(literal)
        self._heads = tuple(
            ((folded, _shared_prefix(lits)), tuple(sorted(lits)))
            for (folded, _two), lits in sorted(by_head.items())
        )
        self._folds = any(folded for (folded, _head), _lits in self._heads)

    def find(self, text: str) -> Iterator[tuple[str, int, int]]:
        """``(kind, start, end)`` of every secret the rules find in ``text``."""
        lowered = text.lower() if self._folds else text
        present: set[tuple[bool, str]] = set()
        for (folded, head), literals in self._heads:
            haystack = lowered if folded else text
            if head in haystack:
                present.update((folded, lit) for lit in literals if lit == head or lit in haystack)
        for rule, keyed in self._keys:
            if keyed is None or not keyed.isdisjoint(present):
                for start, end in rule.spans(text):
                    yield rule.kind, start, end

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(rule.kind for rule in self.rules))


_LOCK: Final = threading.Lock()
_LOADED: list[Detectors] = []


def detectors() -> Detectors:
    """The process's rules, built on first use (importing detect-secrets takes ~0.3 s)."""
    with _LOCK:
        if not _LOADED:
            _LOADED.append(Detectors(_plugin_rules()))
        return _LOADED[0]


def _plugin_rules() -> Iterator[Rule]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    assignment = _assignment_head(RegexBasedDetector)
    plugins: list[type[Any]] = list(get_mapping_from_secret_type_to_class().values())
    for plugin in sorted(plugins, key=lambda cls: cls.__name__):
        if plugin.__name__ in EXCLUDED_PLUGINS or not issubclass(plugin, RegexBasedDetector):
            continue
        confirm = _confirmation(plugin, RegexBasedDetector)
        # An abstract property on the base, a plain class attribute in every plugin.
        patterns = cast("Iterable[re.Pattern[str]]", plugin.denylist)
        for pattern in patterns:
            if pattern.pattern.startswith(assignment):
                continue
            yield Rule(
                str(plugin.secret_type),
                pattern,
                prefilter(pattern),
                confirm=confirm,
                screen=screen(pattern),
            )


def _assignment_head(base: Any) -> str:
    """How every expression ``build_assignment_regex`` makes begins (read from the library)."""
    marker = "\x00"
    probe: str = base.build_assignment_regex(marker, marker, marker).pattern
    return probe[: probe.index(marker)]


def _confirmation(plugin: type[Any], base: type[Any]) -> Callable[[str], bool] | None:
    """The plugin's own ``analyze_string`` over a match, when it adds a check to the regex."""
    if plugin.analyze_string is base.analyze_string:
        return None
    instance = plugin()
    return lambda found: any(True for _ in instance.analyze_string(found))


# -- the prefilter: literals every match holds, read from the expression's parse tree ----


def prefilter(pattern: re.Pattern[str]) -> Needs:
    """The literal groups any text ``pattern`` matches must hold (lower-cased when it ignores
    case; see above)."""
    fold = bool(pattern.flags & re.IGNORECASE)
    _exact, needs = _sequence(list(sre_parse.parse(pattern.pattern, pattern.flags)), fold)
    return tuple(sorted({_minimal(group) for group in needs}, key=sorted))


def screen(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """``pattern`` from its first top-level literal on, when that literal is not its start.

    None when the expression starts with a literal (the engine already jumps to it) or
    has none at its top level, or when the tail refers back to a group it left behind.
    """
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    items = list(parsed)
    first = next((i for i, (op, _arg) in enumerate(items) if op is sre.LITERAL), 0)
    if first == 0 or _refers_back(items[first:]):
        return None
    tail = sre_parse.SubPattern(parsed.state, items[first:])
    return cast("re.Pattern[str]", sre_compile.compile(tail, pattern.flags))


def _refers_back(items: list[tuple[Any, Any]]) -> bool:
    """Whether any node under ``items`` is a back-reference (or a conditional on a group)."""
    for op, arg in items:
        if op in _BACK_REFERENCES or any(_refers_back(list(p)) for p in _subpatterns(arg)):
            return True
    return False


def _subpatterns(arg: Any) -> Iterator[Any]:
    if isinstance(arg, sre_parse.SubPattern):
        yield arg
    elif isinstance(arg, list | tuple):
        for value in arg:
            yield from _subpatterns(value)


def _sequence(items: list[tuple[Any, Any]], fold: bool) -> tuple[Exact, Needs]:
    needs: list[frozenset[str]] = []
    run: Exact = frozenset({""})
    whole: Exact = frozenset({""})
    for op, arg in items:
        exact, inner = _node(op, arg, fold)
        needs.extend(inner)
        whole = _joined(whole, exact)
        joined = _joined(run, exact)
        if joined is None:
            needs.extend(_usable(run))
            run = exact if exact is not None else frozenset({""})
        else:
            run = joined
    needs.extend(_usable(run))
    return whole, tuple(needs)


def _node(op: Any, arg: Any, fold: bool) -> tuple[Exact, Needs]:
    if op is sre.LITERAL:
        return frozenset({_char(arg, fold)}), ()
    if op is sre.IN:
        return _char_class(arg, fold), ()
    if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        return frozenset({""}), ()  # zero-width: adds nothing to the match
    if op is sre.SUBPATTERN:
        _group, add_flags, _del_flags, body = arg
        if add_flags & re.IGNORECASE and not fold:
            return None, ()  # a case-blind part of a case-minding expression: ask nothing
        return _sequence(list(body), fold)
    if op is sre.BRANCH:
        return _branch([_sequence(list(alt), fold) for alt in arg[1]])
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
        low, high, body = arg
        return _repeat(low, high, body, fold)
    return None, ()  # any character, a back-reference, a category: nothing to ask for


def _char(code: int, fold: bool) -> str:
    return chr(code).lower() if fold else chr(code)


def _char_class(items: list[tuple[Any, Any]], fold: bool) -> Exact:
    chars: set[str] = set()
    for op, arg in items:
        if op is sre.LITERAL:
            chars.add(_char(arg, fold))
        elif op is sre.RANGE and arg[1] - arg[0] < MAX_CLASS:
            chars.update(_char(c, fold) for c in range(arg[0], arg[1] + 1))
        elif op is sre.CATEGORY and arg is sre.CATEGORY_DIGIT:
            chars.update("0123456789")  # on ASCII text (module docstring)
        else:
            return None
    return frozenset(chars) if len(chars) <= MAX_CLASS else None


def _branch(alternatives: list[tuple[Exact, Needs]]) -> tuple[Exact, Needs]:
    exacts = [exact for exact, _needs in alternatives]
    exact: Exact = None
    if all(e is not None for e in exacts):
        exact = frozenset(s for e in exacts if e is not None for s in e)
        if len(exact) > MAX_EXACT:
            exact = None
    if exact is not None:
        return exact, ()
    best = [_best(exact_, needs) for exact_, needs in alternatives]
    if any(group is None for group in best):
        return None, ()
    return None, (frozenset(s for group in best if group is not None for s in group),)


def _repeat(low: int, high: int, body: Any, fold: bool) -> tuple[Exact, Needs]:
    exact, needs = _sequence(list(body), fold)
    if low == 0:
        return (exact | {""}) if exact is not None and high == 1 else None, ()
    if low == high == 1:
        return exact, needs
    return None, (*needs, *_usable(exact))


def _joined(left: Exact, right: Exact) -> Exact:
    if left is None or right is None or len(left) * len(right) > MAX_EXACT:
        return None
    return frozenset(a + b for a, b in product(left, right))


def _usable(exact: Exact) -> Needs:
    """``exact`` as a literal group, unless it could match the empty string (it asks nothing)."""
    return (exact,) if exact is not None and "" not in exact else ()


def _best(exact: Exact, needs: Needs) -> frozenset[str] | None:
    """The most telling single group of one alternative: its longest shortest literal."""
    groups = [*_usable(exact), *needs]
    return max(groups, key=lambda g: min(map(len, g)), default=None)


def _shared_prefix(literals: Iterable[str]) -> str:
    """The longest start every one of ``literals`` has."""
    ordered = sorted(literals)
    first, last = ordered[0], ordered[-1]  # the two furthest apart share the least
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    return first[:size]


def _telling(needs: Needs) -> frozenset[str] | None:
    """The group that screens best: its shortest literal longest, then the fewest literals."""
    return max(needs, key=lambda g: (min(map(len, g)), -len(g)), default=None)


def _minimal(group: frozenset[str]) -> frozenset[str]:
    """``group`` without a literal that holds another one (``clou`` goes when ``cl`` is there)."""
    return frozenset(s for s in group if not any(t != s and t in s for t in group))
