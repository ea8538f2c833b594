"""The canonicaliser of resource URIs and prompt names (P-URI-1), one function at a time.

The end-to-end attacks are in ``test_uri_spelling_attacks.py``; here each rule is
shown on examples, and the properties that make it a canonical form (idempotent,
blind to every spelling it folds, refusing what it cannot fold) are checked with
hypothesis.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cartograph.config.model import CatalogPolicy
from cartograph.errors import PolicyError
from cartograph.index.serving import policy_allows
from cartograph.server.content_names import (
    UNRESERVED,
    canonical_prompt,
    canonical_server,
    canonical_uri,
    remove_dot_segments,
)
from cartograph.server.passthrough import canonical_resource_uri

CANONICAL = {
    "mem://small": "mem://small",
    "MEM://Files/se%63ret/key": "mem://files/secret/key",
    "file:///secret/%6b%65%79": "file:///secret/key",
    "mem://files/public/../secret/key": "mem://files/secret/key",
    "mem://files/public/%2E%2E/secret/./key": "mem://files/secret/key",
    "mem://h/a/..": "mem://h/",
    "mem:///x": "mem:///x",  # urlunsplit would say mem:/x
    "m%45m://x": "mem://x",
    "HTTP://User@EXAMPLE.com:80/%7euser?q=a%2fb#F%2f": "http://User@example.com:80/~user?q=a%2Fb#F%2F",
    "http://EX%41MPLE.com/": "http://example.com/",
    "http://[::1]:80/a": "http://[::1]:80/a",
    "mem://x/caf%c3%a9": "mem://x/caf%C3%A9",
    "mem://echo/{text}": "mem://echo/{text}",
    "demo://resource/dynamic/text/{resourceId}": "demo://resource/dynamic/text/{resourceId}",
    "Weather://{cityName}:{Port}/Now": "weather://{cityName}:{Port}/Now",
    "file:///tmp/a b?x=1#f": "file:///tmp/a b?x=1#f",
    "urn:isbn:0451450523": "urn:isbn:0451450523",
    "search://q?path=a%2Fb%25c": "search://q?path=a%2Fb%25c",  # the query keeps / and %
}

AMBIGUOUS = {
    "file:///secret%2Fkey": "%2F",
    "file:///secret%2fkey": "%2F",
    "file:///secret%252Fkey": "%25",
    "file:///secret%5Ckey": "%5C",
    "file:///secret\\key": "'\\'",
    "file:///secret%00key": "%00",
    "mem://h%2Fx/y": "%2F",
    "mem://%zz": "two hex digits",
    "mem://x/y?z=%g1": "two hex digits",
    "mem://x/a\u200bb": "U+200B",
    "mem://x/a\u202eb": "U+202E",
    "mem://x/a\nb": "U+000A",
    "mem://x/a\x85b": "U+0085",
    " mem://x": "whitespace",
    "mem://x/ ": "whitespace",
    "mem:/.//x": "authority",
    "./a:b": "scheme",
    "./ x": "whitespace",
}


@pytest.mark.parametrize(("uri", "canonical"), CANONICAL.items())
def test_a_uri_has_one_canonical_spelling(uri: str, canonical: str) -> None:
    assert canonical_uri(uri) == canonical


@pytest.mark.parametrize(("uri", "why"), AMBIGUOUS.items())
def test_an_ambiguous_spelling_is_refused_with_its_code_and_reason(uri: str, why: str) -> None:
    with pytest.raises(PolicyError) as refused:
        canonical_uri(uri)
    assert refused.value.code == "resource_uri_ambiguous"
    assert why in refused.value.details["reason"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [  # RFC 3986 §5.2.4's own examples, and its relative-path reading
        ("/a/b/c/./../../g", "/a/g"),
        ("mid/content=5/../6", "mid/6"),
        ("a/../../b", "/b"),
        ("/../a", "/a"),
        ("/..", "/"),
        ("/.", "/"),
        ("/a/.", "/a/"),
        ("..", ""),
        ("../a", "a"),
        ("/a/..b/.c", "/a/..b/.c"),
    ],
)
def test_dot_segments_are_removed_as_rfc_3986_says(path: str, expected: str) -> None:
    assert remove_dot_segments(path) == expected


ABSOLUTE_PATHS = st.text(alphabet="ab./", max_size=24).map(lambda p: "/" + p.lstrip("/"))


@given(ABSOLUTE_PATHS.filter(lambda p: "//" not in p))
def test_dot_segment_removal_agrees_with_urljoin_on_absolute_paths(path: str) -> None:
    """urljoin lets ``..`` pop the root's empty segment (``/..//`` is ``/``, not ``//``),
    so empty segments are left out of the comparison."""
    assert remove_dot_segments(path) == urlsplit(urljoin("http://h/base", path)).path


URI_LIKE = st.one_of(st.text(max_size=40), st.text(alphabet="aA%2fF5E3:/?#.[]{}@ ~\\", max_size=30))


@given(URI_LIKE)
def test_canonical_form_is_idempotent(uri: str) -> None:
    try:
        once = canonical_uri(uri)
    except PolicyError as exc:
        assert exc.code == "resource_uri_ambiguous"
        return
    assert canonical_uri(once) == once


SEGMENT = st.text(alphabet="abcXYZ019-._~!$&'()*+,;=:@", min_size=1, max_size=6).filter(
    lambda s: s not in (".", "..")
)


@st.composite
def respelt(draw: st.DrawFn) -> tuple[str, str]:
    """``(a URI, another spelling of it)``: case of scheme/host, escaped unreserved, dots."""
    scheme = draw(st.sampled_from(["mem", "file", "demo"]))
    host = draw(st.text(alphabet="abcdefxyz0-", max_size=6))
    segments = draw(st.lists(SEGMENT, min_size=1, max_size=4))
    plain = f"{scheme}://{host}/" + "/".join(segments)

    def escape(char: str) -> str:
        return f"%{ord(char):02{draw(st.sampled_from('xX'))}}" if draw(st.booleans()) else char

    def spell(text: str) -> str:
        return "".join(escape(c) if c in UNRESERVED else c for c in text)

    def case(text: str) -> str:
        return "".join(c.upper() if draw(st.booleans()) else c for c in text)

    detour = draw(st.sampled_from(["", "./", "x/../", "%2E/", "y/%2e%2E/"]))
    other = f"{case(scheme)}://{spell(case(host))}/{detour}" + "/".join(map(spell, segments))
    return plain, other


@given(respelt())
def test_every_respelling_of_a_uri_has_its_canonical_form(pair: tuple[str, str]) -> None:
    plain, other = pair
    assert canonical_uri(other) == canonical_uri(plain)


@given(respelt())
def test_a_deny_glob_holds_against_every_spelling_of_what_it_denies(
    pair: tuple[str, str],
) -> None:
    plain, other = pair
    policy = CatalogPolicy(deny=(f"up/{canonical_uri(plain)}",))
    assert not policy_allows(policy, "up", canonical_uri(other))


@given(
    st.text(alphabet="abc/", max_size=8),
    st.sampled_from(["%2F", "%2f", "%25", "%5C", "%5c", "%00", "%1F", "%7F"]),
    st.text(alphabet="abc/", max_size=8),
)
def test_an_ambiguous_escape_before_the_query_is_always_refused(
    head: str, escape: str, tail: str
) -> None:
    with pytest.raises(PolicyError) as refused:
        canonical_uri(f"mem://h/{head}{escape}{tail}?q=1")
    assert refused.value.code == "resource_uri_ambiguous"


@given(URI_LIKE)
def test_a_canonical_form_escapes_nothing_unreserved_and_spells_hex_in_upper_case(
    uri: str,
) -> None:
    try:
        canonical = canonical_uri(uri)
    except PolicyError:
        return
    escapes = [canonical[i + 1 : i + 3] for i, c in enumerate(canonical) if c == "%"]
    assert all(e.upper() == e and chr(int(e, 16)) not in UNRESERVED for e in escapes)


def test_a_namespaced_uri_is_respelt_whole_and_an_ambiguous_one_is_left_alone() -> None:
    assert (
        canonical_resource_uri("cartograph://main/%63ontent/MEM://Small/./x")
        == "cartograph://main/content/mem://small/x"
    )
    ambiguous = "cartograph://main/content/mem://files/secret%2Fkey"
    assert canonical_resource_uri(ambiguous) == ambiguous
    assert canonical_resource_uri("mem://small") == "mem://small"  # not Cartograph's


def test_a_server_part_with_a_control_character_is_refused() -> None:
    assert canonical_server("my server") == "my server"
    with pytest.raises(PolicyError) as refused:
        canonical_server("content\n")
    assert refused.value.code == "resource_uri_ambiguous"


@pytest.mark.parametrize("name", ["greet", "ops/greet", "café", "问候", "a b"])
def test_a_plain_prompt_name_is_its_own_canonical_form(name: str) -> None:
    assert canonical_prompt(name) == name


@pytest.mark.parametrize(
    "name", ["greet\u200b", "gre\u0065\u0301t", "greet\x00", "\u202egreet", " greet", "greet\n"]
)
def test_an_ambiguous_prompt_name_is_refused_with_its_code(name: str) -> None:
    with pytest.raises(PolicyError) as refused:
        canonical_prompt(name)
    assert refused.value.code == "prompt_name_ambiguous"
