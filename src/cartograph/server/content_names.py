"""One spelling of each resource URI and prompt name: matched, audited, forwarded (P-URI-1).

A catalog's ``allow``/``deny`` globs compare text, but an upstream *reads* a URI:
it may percent-decode it, fold the case of its scheme or host, or resolve ``..``.
A URI the globs read as one resource and the upstream as another is a way round
a deny (issue 24: ``mem://files/secret%2Fkey`` was served past
``deny = ["content/mem://files/secret/*"]``). So every entry point —
``resources/read``, ``resources/subscribe``/``unsubscribe``, ``prompts/get``,
``completion/complete``'s references and the listings — turns the client's
spelling into one canonical form first, and the policy, the audit record and
the upstream all get that one string:

* **normalised** (RFC 3986 §6.2.2): scheme and host in lower case, the hex digits
  of a percent-escape in upper case, escapes of unreserved characters
  (``A-Z a-z 0-9 - . _ ~``) decoded, ``.`` and ``..`` path segments removed (§5.2.4);
* **refused** (``resource_uri_ambiguous``), because upstreams differ in how they
  read it and no rewriting can settle it: before the query, an encoded ``/``,
  ``\\`` or ``%`` (``%2F``, ``%5C``, ``%25``), an encoded control character or a
  raw ``\\``; anywhere, a ``%`` not followed by two hex digits, a control, format
  (bidi, zero-width) or surrogate character, or whitespace at either end.

The query and fragment keep their escapes (bar the unreserved ones): a ``%2F`` in
a query value is ordinary, and does not change which resource the path names.
A prompt name is not a URI: nothing in it is rewritten, but the same characters
are refused, and so is a name not in Unicode NFC (``prompt_name_ambiguous``).

:mod:`urllib.parse` is not used to split: ``urlsplit`` silently drops tabs and
newlines and strips leading blanks, and ``urlunsplit`` turns ``mem:///x`` into
``mem:/x`` — each a second spelling. The split here is RFC 3986 Appendix B's.
"""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Final, NoReturn

from cartograph import error_codes as codes
from cartograph.echo import echoed
from cartograph.errors import PolicyError

UNRESERVED: Final = frozenset(string.ascii_letters + string.digits + "-._~")
"""RFC 3986 §2.3: an escape of one of these is the character itself."""

MAX_URI_CHARS: Final = 8192
"""The longest resource URI (or prompt name) a client may name, checked before any other work.

Far above what an upstream lists (the limit of common HTTP servers' request lines),
and far below what costs the event loop time to normalise: several megabytes took a
second (issue 24). Longer is refused (``resource_uri_too_long``) and echoed bounded.
"""

AMBIGUOUS_ESCAPES: Final = frozenset({0x2F, 0x5C, 0x25, 0x7F, *range(0x20)})
"""Escapes refused before the query: ``/``, ``\\``, ``%`` and the control bytes."""

_REFUSED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SPLIT: Final = re.compile(  # RFC 3986 Appendix B
    r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.S
)
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_ESCAPE: Final = re.compile(r"%([0-9A-Fa-f]{2})?")
_HOST_PARTS: Final = re.compile(r"\{[^}]*\}|%[0-9A-F]{2}|[^{%]+|[{%]")
_ASCII_LOWER: Final = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class _Ambiguous(Exception):
    """Why a spelling is refused; turned into the coded :class:`PolicyError` by the caller."""


def _refuse(reason: str) -> NoReturn:
    raise _Ambiguous(reason)


def canonical_uri(uri: str) -> str:
    """The canonical spelling of an upstream resource URI or URI template.

    Raises :class:`~cartograph.errors.PolicyError` (``resource_uri_ambiguous``)
    for a spelling that two readers could take for two resources, and
    (``resource_uri_too_long``) for one over :data:`MAX_URI_CHARS`.
    """
    check_uri_length(uri)
    try:
        return _canonical(uri)
    except _Ambiguous as why:
        raise PolicyError(
            f"resource URI {echoed(uri)!r} is refused: {why}, which upstreams read in different "
            "ways; ask for the resource as resources/list spells it",
            code=codes.RESOURCE_URI_AMBIGUOUS,
            reason=str(why),
        ) from None


def canonical_server(name: str) -> str:
    """A resource URI's (percent-decoded) server part, refused like the URI if ambiguous."""
    try:
        _check_characters(name)
    except _Ambiguous as why:
        raise PolicyError(
            f"the server part {echoed(name)!r} of a resource URI is refused: {why}; "
            "ask for the resource as resources/list spells it",
            code=codes.RESOURCE_URI_AMBIGUOUS,
            reason=str(why),
        ) from None
    return name


def canonical_prompt(name: str) -> str:
    """``name`` itself, or :class:`PolicyError` (``prompt_name_ambiguous``) if it is ambiguous.

    A name over :data:`MAX_URI_CHARS` is refused first (``prompt_name_too_long``).
    """
    if len(name) > MAX_URI_CHARS:
        raise PolicyError(
            f"prompt name {echoed(name)!r} is refused: it is longer than {MAX_URI_CHARS} "
            "characters; ask for the prompt as prompts/list spells it",
            code=codes.PROMPT_NAME_TOO_LONG,
            limit=MAX_URI_CHARS,
        )
    try:
        _check_characters(name)
        if unicodedata.normalize("NFC", name) != name:
            _refuse("it is not in Unicode NFC")
    except _Ambiguous as why:
        raise PolicyError(
            f"prompt name {echoed(name)!r} is refused: {why}; "
            "ask for the prompt as prompts/list spells it",
            code=codes.PROMPT_NAME_AMBIGUOUS,
            reason=str(why),
        ) from None
    return name


def check_uri_length(uri: str) -> None:
    """Refuse (``resource_uri_too_long``) a URI over :data:`MAX_URI_CHARS`, before reading it."""
    if len(uri) > MAX_URI_CHARS:
        raise PolicyError(
            f"resource URI {echoed(uri)!r} is refused: it is longer than {MAX_URI_CHARS} "
            "characters; ask for the resource as resources/list spells it",
            code=codes.RESOURCE_URI_TOO_LONG,
            limit=MAX_URI_CHARS,
        )


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4, step by step: ``/a/./b/../c`` is ``/a/c``, ``/../a`` is ``/a``.

    Kept to the RFC's own algorithm (not a ``split("/")`` shortcut, which differs
    on relative paths such as ``a/../../b``) and linear in the path's length.
    """
    if "." not in path:
        return path
    out: list[str] = []
    i, end = 0, len(path)
    while i < end:
        if path.startswith("../", i):  # A
            i += 3
        elif path.startswith("./", i) or path.startswith("/./", i):  # A, B
            i += 2
        elif path.startswith("/..", i) and (i + 3 == end or path[i + 3] == "/"):  # C
            i += 3
            if out:
                out.pop()
            if i == end:
                out.append("/")
        elif path.startswith("/.", i) and i + 2 == end:  # B
            out.append("/")
            i = end
        elif end - i <= 2 and path[i:] in (".", ".."):  # D
            i = end
        else:  # E: one segment, with the "/" before it
            cut = path.find("/", i + 1)
            cut = end if cut < 0 else cut
            out.append(path[i:cut])
            i = cut
    return "".join(out)


def _canonical(uri: str) -> str:
    _check_characters(uri)
    found = _SPLIT.fullmatch(uri)
    assert found is not None  # every group is optional: Appendix B matches any string
    scheme, authority, path, query, fragment = found.groups()
    if "\\" in f"{scheme or ''}{authority or ''}{path}":
        _refuse("it holds a '\\' before the query")
    out = ""
    if scheme is not None:
        scheme = _escapes(scheme, strict=True)
        out += (scheme.lower() if _SCHEME.fullmatch(scheme) else scheme) + ":"
    if authority is not None:
        out += "//" + _authority(authority)
    path = remove_dot_segments(_escapes(path, strict=True))
    if authority is None and path.startswith("//"):
        _refuse("its path would read as an authority once its dot segments are removed")
    if scheme is None and authority is None and ":" in path.partition("/")[0]:
        _refuse("its path would read as a scheme once its dot segments are removed")
    out += path
    if query is not None:
        out += "?" + _escapes(query, strict=False)
    if fragment is not None:
        out += "#" + _escapes(fragment, strict=False)
    if out != out.strip():  # ./ x: removing the dot segment left a blank at the start
        _refuse("it starts with whitespace once its dot segments are removed")
    return out


def _authority(authority: str) -> str:
    userinfo, at, host = authority.rpartition("@")
    colon, port = "", ""
    if ":" in host and not host.endswith("]"):  # an IPv6 literal holds colons of its own
        host, colon, port = host.rpartition(":")
    host = "".join(
        part if part[0] in "{%" else part.translate(_ASCII_LOWER)
        for part in _HOST_PARTS.findall(_escapes(host, strict=True))
    )  # an escape's hex stays upper case, a template's {variable} keeps its own case
    userinfo, port = _escapes(userinfo, strict=True), _escapes(port, strict=True)
    return f"{userinfo}{at}{host}{colon}{port}"


def _escapes(text: str, *, strict: bool) -> str:
    """Upper-case every escape's hex, decode unreserved ones; ``strict``: refuse ambiguous ones."""

    def one(match: re.Match[str]) -> str:
        digits = match.group(1)
        if digits is None:
            _refuse("it holds a '%' not followed by two hex digits")
        byte = int(digits, 16)
        if strict and byte in AMBIGUOUS_ESCAPES:
            _refuse(f"it holds %{digits.upper()} before the query")
        char = chr(byte)
        return char if char in UNRESERVED else f"%{digits.upper()}"

    return _ESCAPE.sub(one, text)


def _check_characters(text: str) -> None:
    refused = {c for c in set(text) if unicodedata.category(c) in _REFUSED_CATEGORIES}
    if refused:  # a set: a long URI costs one category look-up per distinct character
        first = next(c for c in text if c in refused)
        _refuse(f"it holds the character U+{ord(first):04X}")
    if text != text.strip():
        _refuse("it starts or ends with whitespace")


__all__ = [
    "AMBIGUOUS_ESCAPES",
    "MAX_URI_CHARS",
    "UNRESERVED",
    "canonical_prompt",
    "canonical_server",
    "canonical_uri",
    "check_uri_length",
    "remove_dot_segments",
]
