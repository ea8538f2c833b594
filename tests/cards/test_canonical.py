"""RFC 8785 canonical form and the strict card loader (P-SIG-1, P-SIG-2)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from cartograph.cards.canonical import MAX_SAFE_INTEGER, canonical_bytes, loads_strict
from cartograph.errors import CardFormatError


@pytest.mark.promise("P-SIG-1")
def test_canonical_form_matches_rfc8785_where_sorted_json_dumps_does_not() -> None:
    value = {"b": 1.0, "a": 1e-7, "é": "ü", "\U0001f600": 1, "\ue000": 2}

    assert canonical_bytes(value) == ('{"a":1e-7,"b":1,"é":"ü","\U0001f600":1,"\ue000":2}'.encode())
    assert canonical_bytes(value) != json.dumps(value, sort_keys=True).encode()


@pytest.mark.promise("P-SIG-1")
def test_canonicalising_twice_is_stable() -> None:
    value = {"z": [1, 2.5, {"y": None, "x": True}], "a": "text\n\u2028"}
    once = canonical_bytes(value)

    assert canonical_bytes(loads_strict(once)) == once


@pytest.mark.promise("P-SIG-2")
def test_duplicate_keys_are_refused_with_their_own_code() -> None:
    with pytest.raises(CardFormatError) as raised:
        loads_strict(b'{"a": 1, "a": 2}')
    assert raised.value.code == "card_duplicate_key"


@pytest.mark.promise("P-SIG-2")
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_are_refused_with_their_own_code(literal: str) -> None:
    with pytest.raises(CardFormatError) as raised:
        loads_strict(f'{{"a": {literal}}}'.encode())
    assert raised.value.code == "card_non_finite"


@pytest.mark.promise("P-SIG-2")
@pytest.mark.parametrize("number", [MAX_SAFE_INTEGER + 1, -(MAX_SAFE_INTEGER + 1), 10**400])
def test_integers_beyond_2_53_are_refused_with_their_own_code(number: int) -> None:
    with pytest.raises(CardFormatError) as raised:
        loads_strict(f'{{"a": {number}}}'.encode())
    assert raised.value.code == "card_integer_range"


@pytest.mark.promise("P-SIG-2")
def test_the_largest_safe_integer_is_accepted() -> None:
    assert loads_strict(f"[{MAX_SAFE_INTEGER}, {-MAX_SAFE_INTEGER}]".encode()) == [
        MAX_SAFE_INTEGER,
        -MAX_SAFE_INTEGER,
    ]


@pytest.mark.promise("P-SIG-2")
def test_non_string_keys_are_refused_with_their_own_code() -> None:
    with pytest.raises(CardFormatError) as raised:
        canonical_bytes({1: "one"})
    assert raised.value.code == "card_non_string_key"


@pytest.mark.promise("P-SIG-2")
def test_each_refusal_has_a_distinct_code() -> None:
    codes = set()
    for data in (b'{"a":1,"a":1}', b'{"a":NaN}', b'{"a":9007199254740992}', b'{"a":'):
        with pytest.raises(CardFormatError) as raised:
            loads_strict(data)
        codes.add(raised.value.code)
    with pytest.raises(CardFormatError) as raised:
        canonical_bytes({("tuple",): 1})
    codes.add(raised.value.code)
    assert len(codes) == 5


@pytest.mark.promise("P-REL-5")
def test_oversized_documents_are_refused_before_parsing() -> None:
    with pytest.raises(CardFormatError) as raised:
        loads_strict(b" " * 101, limit=100)
    assert raised.value.code == "card_too_large"


def test_unpaired_surrogates_are_refused() -> None:
    with pytest.raises(CardFormatError) as raised:
        loads_strict(b'{"a": "\\ud800"}')
    assert raised.value.code == "card_bad_string"


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False, width=64).filter(
        lambda f: not (f.is_integer() and MAX_SAFE_INTEGER < abs(f) < 1e21)
    )
    | st.text(st.characters(codec="utf-8"))
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(codec="utf-8")), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.promise("P-SIG-1")
@settings(max_examples=400, deadline=None)
@given(value=_VALUES)
def test_the_fast_canonical_path_gives_exactly_the_rfc8785_bytes(value: Any) -> None:
    """Every value, plain or not (floats, astral keys), canonicalises as rfc8785 does."""
    assert canonical_bytes(value) == bytes(rfc8785.dumps(value))


def test_keys_beyond_the_bmp_sort_in_utf16_order_not_code_point_order() -> None:
    value = {"\U0001f600": 1, "\uff61": 2}  # code point order and UTF-16 order disagree
    assert canonical_bytes(value) == bytes(rfc8785.dumps(value))
    assert canonical_bytes(value) != json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":")
    ).encode("utf-8")
