"""P-REL-8 (card part): the card loader and canonicaliser raise only documented errors."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cartograph.cards.canonical import canonical_bytes, loads_strict
from cartograph.cards.signing import parse_card
from cartograph.errors import CardError

SEEDS = Path(__file__).resolve().parent / "fixtures" / "fuzz_seeds"
VALID = (
    Path(__file__).resolve().parent / "fixtures" / "cards" / "valid_files_v2.json"
).read_bytes()

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=5) | st.integers(), children, max_size=4)
    ),
    max_leaves=20,
)


def load(data: bytes) -> None:
    with contextlib.suppress(CardError):
        parse_card(data)


@pytest.mark.promise("P-REL-8")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_card_loader_raises_only_card_errors_on_arbitrary_bytes(data: bytes) -> None:
    load(data)


@pytest.mark.promise("P-REL-8")
@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=len(VALID) - 1), st.binary(min_size=1, max_size=8))
def test_card_loader_raises_only_card_errors_on_mutated_cards(offset: int, patch: bytes) -> None:
    load(VALID[:offset] + patch + VALID[offset + len(patch) :])


@pytest.mark.promise("P-REL-8")
@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonicaliser_raises_only_card_errors_and_round_trips(value: object) -> None:
    try:
        data = canonical_bytes(value)
    except CardError:
        return
    assert canonical_bytes(loads_strict(data)) == data


@pytest.mark.promise("P-REL-8")
@settings(max_examples=200, deadline=None)
@given(json_values)
def test_strict_loader_raises_only_card_errors_on_json_text(value: object) -> None:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return
    with contextlib.suppress(CardError):
        loads_strict(text.encode("utf-8", "surrogatepass"))


@pytest.mark.promise("P-REL-8")
@pytest.mark.parametrize("seed", sorted(p.name for p in SEEDS.iterdir()))
def test_seed_corpus_of_past_crashers_raises_only_card_errors(seed: str) -> None:
    data = (SEEDS / seed).read_bytes()
    with pytest.raises(CardError):
        parse_card(data)


CANONICALISER_CRASHERS = [9007199254740992.0, -1e20, {"k": [1e20]}]


@pytest.mark.promise("P-REL-8")
@pytest.mark.parametrize("value", CANONICALISER_CRASHERS)
def test_canonicaliser_seed_values_are_refused_or_round_trip(value: object) -> None:
    try:
        data = canonical_bytes(value)
    except CardError as exc:
        assert exc.code == "card_integer_range"
        return
    assert canonical_bytes(loads_strict(data)) == data
