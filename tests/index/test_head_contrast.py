"""The hybrid's head re-scoring (:mod:`cartograph.index.rankers.contrast`) and its fitted file."""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from importlib.resources import files
from typing import Any

import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.model import Catalog
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.embedders.minilm.embedder import MINILM_MODEL_ID
from cartograph.index.rankers import DEFAULT_PARAMS, HybridRanker
from cartograph.index.rankers.contrast import (
    FIT,
    HeadFit,
    head_contrast,
    load_fit,
    name_shares,
    rescore_head,
)
from cartograph.index.rankers.hybrid import _TOOL_FIELDS
from cartograph.index.text import tokenize
from cartograph.index.tool_index import ToolIndex

from .retrieval_fixtures import _tool, small_catalog

fit_script: Any = importlib.import_module("benchmarks.fit_head_rescore")


def _unit(v: list[float]) -> np.ndarray:
    a = np.array(v, dtype=np.float64)
    return a / np.linalg.norm(a)


# Two siblings that share most of their vector (the first axis) and differ on
# the second and third; the task leans a little towards the second sibling's
# own direction while the first has the higher plain cosine.
SIBLING_A = _unit([1.0, 0.3, 0.0])
SIBLING_B = _unit([1.0, 0.0, 0.25])
TASK = _unit([1.0, 0.05, 0.12])


def _no_shares(positions: np.ndarray) -> np.ndarray:
    return np.zeros(len(positions))


def test_contrast_points_at_what_differs_between_the_candidates() -> None:
    rows = np.stack([SIBLING_A, SIBLING_B])
    plain = rows @ TASK
    contrast = head_contrast(TASK, rows)
    assert plain[0] > plain[1] - 0.05  # nearly tied on the plain cosine
    assert contrast[1] > 0 > contrast[0]  # the task goes B's own way
    assert np.allclose(contrast, -contrast[::-1])  # two candidates: opposite signs


def test_a_lone_candidate_or_a_task_at_the_mean_has_no_contrast() -> None:
    assert head_contrast(TASK, SIBLING_A[None, :]).tolist() == [0.0]
    rows = np.stack([SIBLING_A, SIBLING_B])
    assert np.allclose(head_contrast(rows.mean(axis=0), rows), 0.0)


def test_rescoring_reorders_the_head_and_leaves_the_rest() -> None:
    vectors = np.stack([SIBLING_A, SIBLING_B, _unit([0.0, 1.0, 0.0])])
    ranked = [(0, 1.00), (1, 0.99), (2, 0.50)]
    fit = HeadFit(head=2, contrast_weight=0.3)
    out = rescore_head(ranked, fit, query=TASK, vectors=vectors, shares=_no_shares)
    assert [i for i, _ in out] == [1, 0, 2]
    assert out[2] == (2, 0.50)
    named = HeadFit(head=3, name_weight=0.2)
    shares = {0: 1.0, 1: 0.0, 2: 0.0}
    out = rescore_head(
        ranked,
        named,
        query=TASK,
        vectors=vectors,
        shares=lambda p: np.array([shares[i] for i in p]),
    )
    assert [i for i, _ in out] == [1, 0, 2]  # 1.00 - 0.2 falls below 0.99, not below 0.50
    deep = [(0, 1.00), (1, 0.99), (2, 0.95), (3, 0.90)]
    out = rescore_head(
        deep,
        HeadFit(head=2, name_weight=0.2),
        query=TASK,
        vectors=vectors,
        shares=lambda p: np.ones(len(p)),
    )
    assert [i for i, _ in out] == [0, 1, 2, 3]  # the head stays first ...
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)  # ... and the list stays sorted by score
    assert scores[2:] == pytest.approx([0.79, 0.74])  # moved down by 0.95 - 0.79
    off = rescore_head(ranked, HeadFit(head=2), query=TASK, vectors=vectors, shares=_no_shares)
    assert off == ranked


def memory_catalog() -> Catalog:
    """A tool whose *name* holds a task word, and the sibling whose description does the task."""
    return Catalog.model_validate(
        {
            "servers": [
                {
                    "name": "memory",
                    "description": "A knowledge graph of entities and relations.",
                    "tools": [
                        _tool("read_graph", "Read the whole knowledge graph."),
                        _tool(
                            "create_relations",
                            "Link two entities in the knowledge graph with a relation.",
                            source="Entity the relation starts from",
                        ),
                    ],
                }
            ]
        }
    )


def test_a_tool_matched_by_its_name_words_has_a_high_name_share() -> None:
    index = ToolIndex.build(attest_with_unsafe_throwaway_key(memory_catalog()), FakeEmbedder())
    ctx = index.context("link Alice and Acme in my knowledge graph")
    keys = index.keys()
    positions = np.array([keys.index(("memory", t)) for t in ("read_graph", "create_relations")])
    fields = [(f, float(getattr(DEFAULT_PARAMS, f"{f}_weight"))) for f in _TOOL_FIELDS]
    shares = name_shares(index.corpus.lexical, fields, ctx.query.tokens, positions)
    assert shares[0] > 0.4  # "graph" is half of what read_graph matches, and a name word
    assert shares[1] == 0.0  # link, knowledge, graph: none is a word of create_relations
    assert name_shares(index.corpus.lexical, fields, [], positions).tolist() == [0.0, 0.0]


def test_token_scores_are_each_words_own_bm25() -> None:
    index = ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())
    field = index.corpus.lexical.full
    words = tokenize("weather file nowhere")  # the index's own stems
    positions = np.arange(index.size, dtype=np.int64)[::-1]  # any order, its own columns
    table = field.token_scores(words, positions)
    for row, word in enumerate(words):
        assert np.allclose(table[row], field.scores([word])[positions])
    assert not table[2].any()
    assert table[0].any() and table[1].any()


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(attest_with_unsafe_throwaway_key(small_catalog()), FakeEmbedder())


TASKS = (
    "weather forecast alerts for my city",
    "read the text file from disk",
    "write a file then send the alerts",
)
OFF = replace(DEFAULT_PARAMS, head_dense=0.0, head_contrast=0.0, head_name=0.0)


def test_the_hybrid_orders_its_head_by_the_rescoring(index: ToolIndex) -> None:
    """A large contrast weight makes the head's order the contrast's: the step is applied."""
    strong = HybridRanker(replace(OFF, head_contrast=50.0))
    off = HybridRanker(OFF)
    changed = 0
    for task in TASKS:
        before = off.rank(index.context(task), index.size, k=5)
        head = [i for i, _ in before[: OFF.head_size]]
        ctx = index.context(task)
        rows = np.asarray(index.corpus.tool_vectors[head], dtype=np.float64)
        contrast = head_contrast(ctx.whole_vector(), rows)
        expected = [head[j] for j in np.argsort(-contrast, kind="stable")]
        after = [i for i, _ in strong.rank(ctx, index.size, k=5)][: len(head)]
        assert after == expected
        changed += after != head
    assert changed  # the test would pass vacuously if no order moved


def test_the_hybrid_marks_down_tools_won_by_their_name_words() -> None:
    index = ToolIndex.build(attest_with_unsafe_throwaway_key(memory_catalog()), FakeEmbedder())
    task = "link Alice and Acme in my knowledge graph"
    off = [index.keys()[i][1] for i, _ in HybridRanker(OFF).rank(index.context(task), 2, k=2)]
    assert off == ["read_graph", "create_relations"]  # the fused score prefers the name match
    strong = HybridRanker(replace(OFF, head_name=50.0))
    assert [index.keys()[i][1] for i, _ in strong.rank(index.context(task), 2, k=2)] == [
        "create_relations",
        "read_graph",
    ]


def test_the_first_tools_do_not_depend_on_how_deep_the_caller_looks(index: ToolIndex) -> None:
    ranker = HybridRanker(replace(DEFAULT_PARAMS, head_contrast=50.0))
    for task in TASKS:
        deep = ranker.rank(index.context(task), index.size, k=5)
        for depth in (1, 2, 3):
            assert ranker.rank(index.context(task), depth, k=depth) == deep[:depth]


def test_the_shipped_fit_is_the_default_and_names_the_shipped_model() -> None:
    """The hybrid's defaults are the file's weights, fitted for the encoder that ships."""
    doc = json.loads((files("cartograph.index.rankers") / "head_rescore.json").read_text("utf-8"))
    assert load_fit() == FIT == DEFAULT_PARAMS.head
    shipped = HeadFit(doc["head"], doc["dense_weight"], doc["contrast_weight"], doc["name_weight"])
    assert shipped == FIT
    assert FIT.active and FIT.name_weight > 0.0
    # A new encoder needs a refit: `python benchmarks/fit_head_rescore.py`.
    assert doc["model"] == MINILM_MODEL_ID
    assert doc["fitted_by"] == "benchmarks/fit_head_rescore.py"
    assert set(doc["fitted_on"]) == {"bfcl-train", "metatool-train"}


def test_the_fit_learns_the_feature_that_picks_the_right_tool() -> None:
    """The script's conditional logit: the right tool is the one the last column favours."""
    rng = np.random.default_rng(0)
    xs, ys = [], []
    for _ in range(300):
        x = rng.normal(size=(5, 3)) * [0.02, 0.02, 1.0]
        right = np.zeros(5, dtype=bool)
        right[int(np.argmax(x[:, 2] + rng.normal(scale=0.3, size=5)))] = True
        xs.append(x)
        ys.append(right)
    w = fit_script.fit(xs, ys, 1e-3)
    assert w[2] > 1.0
    assert fit_script.hit_at_1(xs, ys, w) > fit_script.hit_at_1(xs, ys, np.array([1.0, 0, 0]))
