"""The lexical build tokenizes each card field once; joined fields reuse the parts' tokens.

That is only sound if tokens never span the space that joins two fields, which
these tests pin, and if the result is the index built from the joined texts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bm25s
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.index.entries import entries_from_cards
from cartograph.index.lexical import (
    BM25_B,
    BM25_K1,
    FieldIndex,
    JaccardIndex,
    weighted_scores,
)
from cartograph.index.text import tokenize
from tests.cards.support import small_catalog

_TEXT = st.text(st.characters(codec="utf-8"), max_size=60)
_IDENTIFIERS = st.from_regex(r"[A-Za-z][A-Za-z0-9_\-./:]{0,50}", fullmatch=True)


@settings(max_examples=500, deadline=None)
@given(first=_TEXT | _IDENTIFIERS, second=_TEXT | _IDENTIFIERS)
def test_tokens_of_two_fields_joined_by_a_space_are_the_fields_tokens_in_order(
    first: str, second: str
) -> None:
    assert tokenize(f"{first} {second}") == tokenize(first) + tokenize(second)


def test_indexes_built_from_part_tokens_score_as_those_built_from_joined_text() -> None:
    entries = entries_from_cards(attest_with_unsafe_throwaway_key(small_catalog()))
    joined = [f"{e.name} {e.description} {e.arguments}" for e in entries]
    parts = [tokenize(e.name) + tokenize(e.description) + tokenize(e.arguments) for e in entries]
    query = tokenize("read the file contents and write a report")

    assert np.array_equal(FieldIndex(tokens=parts).scores(query), FieldIndex(joined).scores(query))
    assert np.array_equal(
        JaccardIndex(tokens=parts).scores(query), JaccardIndex(joined).scores(query)
    )


_WORDS = st.sampled_from(["read", "file", "write", "report", "time", "zone", "unknownword"])


@settings(max_examples=200, deadline=None)
@given(
    documents=st.lists(st.lists(_WORDS, max_size=8), min_size=1, max_size=12),
    query=st.lists(_WORDS, max_size=6),
)
def test_field_scores_are_bm25s_scores_summed_from_its_postings(
    documents: list[list[str]], query: list[str]
) -> None:
    # Our one-bincount sum must equal what bm25s computes itself, repeated and
    # unknown query tokens included (bm25s counts a repeated token again).
    index = FieldIndex(tokens=documents)
    bm25 = index._bm25
    assert bm25 is not None
    known = [t for t in query if t in bm25.vocab_dict]
    expected = bm25.get_scores(known) if known else np.zeros(len(documents))

    got = index.scores(query)

    assert got.dtype == np.float64 and got.shape == (len(documents),)
    assert np.allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_the_numpy_bm25_build_holds_exactly_the_score_matrix_bm25s_builds() -> None:
    entries = entries_from_cards(attest_with_unsafe_throwaway_key(small_catalog()))
    documents = [tokenize(f"{e.name} {e.description} {e.arguments}") for e in entries] + [[]]
    reference = bm25s.BM25(k1=BM25_K1, b=BM25_B)
    reference.index([d or ["\x00"] for d in documents], show_progress=False)
    ours = FieldIndex(tokens=documents)._bm25
    assert ours is not None

    def column(index: bm25s.BM25, token: str) -> tuple[list[int], list[float]]:
        at = index.vocab_dict.get(token)
        if at is None:
            return [], []
        start, stop = index.scores["indptr"][at], index.scores["indptr"][at + 1]
        data = index.scores["data"][start:stop]
        return index.scores["indices"][start:stop].tolist(), data.tolist()

    assert set(ours.vocab_dict) == set(reference.vocab_dict) - {""}
    for token in set(reference.vocab_dict) - {""}:  # bm25s's "" has no column
        assert column(ours, token) == column(reference, token), token
    query = tokenize("read the file contents")
    assert np.allclose(FieldIndex(tokens=documents).scores(query), reference.get_scores(query))


@settings(max_examples=50, deadline=None)
@given(
    documents=st.lists(st.lists(_WORDS, max_size=8), min_size=1, max_size=12),
    query=st.lists(_WORDS, max_size=6),
)
def test_an_index_read_from_its_files_scores_as_bm25s_loading_them_does(
    tmp_path_factory: pytest.TempPathFactory, documents: list[list[str]], query: list[str]
) -> None:
    # FieldIndex.load reads bm25s's files itself (no bm25s import on the
    # serving path); it must hold what bm25s.BM25.load gives, and save again.
    folder = tmp_path_factory.mktemp("field")
    FieldIndex(tokens=documents).save(folder / "built")
    loaded = FieldIndex.load(folder / "built", len(documents))
    reference = bm25s.BM25.load(str(folder / "built"), mmap=True, show_progress=False)
    loaded.save(folder / "again")
    again = FieldIndex.load(folder / "again", len(documents))

    assert loaded._bm25 is None and loaded._vocabulary == reference.vocab_dict
    known = [t for t in query if t in reference.vocab_dict]
    expected = reference.get_scores(known) if known else np.zeros(len(documents))
    assert np.allclose(loaded.scores(query), expected, rtol=1e-6, atol=1e-7)
    assert np.array_equal(again.scores(query), loaded.scores(query))
    assert np.array_equal(
        weighted_scores([(loaded, 0.5)], query), weighted_scores([(again, 0.5)], query)
    )


def test_reading_a_saved_index_imports_neither_bm25s_nor_scipy(tmp_path: Path) -> None:
    # bm25s imports scipy.sparse, which imports numpy.f2py and numpy.ma: ~0.6 s
    # of CPU before `serve` or the CLI's discover could answer from a snapshot.
    FieldIndex(tokens=[["read", "file"], ["write", "report"]]).save(tmp_path)
    probe = (
        "import json, sys\n"
        "import cartograph.index.discover, cartograph.index.snapshot\n"
        "from cartograph.index.lexical import FieldIndex\n"
        f"print(FieldIndex.load(__import__('pathlib').Path({str(tmp_path)!r}), 2)"
        ".scores(['file']).tolist())\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('bm25s', 'scipy', 'jsonschema'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    scores, loaded = done.stdout.splitlines()[-2:]
    assert json.loads(scores)[0] > 0.0
    assert json.loads(loaded) == []
