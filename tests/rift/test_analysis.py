"""Rift's three layers on hand-built catalogs whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist

from cartograph.cards.verified import VerifiedCards
from cartograph.rift.analysis import EmbedFn, RiftTool, analyse, tools_from_cards
from cartograph.rift.clustering import cluster
from cartograph.rift.model import Linkage, RiftSettings
from cartograph.rift.queries import Probe
from tests.rift.support import cards_with_text, catalog_of, explicit_embed, schema

SAME = "Looks up records in the archive and returns matching entries."


def _identical_catalog_cards() -> VerifiedCards:
    tools = [
        ("fetch_alpha", "x", schema(query="search words")),
        ("fetch_beta", "x", schema(ident="record id")),
        ("fetch_gamma", "x", schema(year="which year")),
    ]
    catalog = catalog_of({"archive": tools})
    return cards_with_text(catalog, {"archive": {t: SAME for t, _, _ in tools}})


def test_identical_descriptions_make_one_high_cluster_with_zero_margin_and_regenerate_all(
    fake_embed: EmbedFn,
) -> None:
    cards = _identical_catalog_cards()
    report = analyse(tools_from_cards(cards), fake_embed, RiftSettings(), model_id="fake")

    assert len(report.clusters) == 1
    only = report.clusters[0]
    assert only.risk == "HIGH"
    assert only.margin_min == 0.0
    assert only.cohesion == pytest.approx(1.0, abs=1e-4)
    assert {m.tool for m in only.members} == {"fetch_alpha", "fetch_beta", "fetch_gamma"}
    assert all(m.regenerate and m.distinct == () for m in only.members)
    assert all(m.margin == 0.0 for m in only.members)
    assert only.scope == "within-server"
    assert any("identical card text" in note for note in only.notes)


def test_regenerate_suggestions_name_words_from_each_tools_own_name(fake_embed: EmbedFn) -> None:
    cards = _identical_catalog_cards()
    report = analyse(tools_from_cards(cards), fake_embed, RiftSettings(), model_id="fake")
    advice = {s.tool: s for s in report.clusters[0].suggestions}
    assert advice["fetch_alpha"].words == ("alpha",)
    assert advice["fetch_beta"].source == "name"
    assert "gamma" in advice["fetch_gamma"].text


def test_well_separated_tools_form_no_clusters(fake_embed: EmbedFn) -> None:
    tools = {
        "weather": [("forecast", "x", schema(city="city name"))],
        "git": [("commit", "x", schema(message="commit message"))],
        "files": [("remove", "x", schema(path="file path"))],
    }
    text = {
        "weather": {"forecast": "Predicts rain sunshine temperature tomorrow"},
        "git": {"commit": "Records staged repository changes permanently"},
        "files": {"remove": "Deletes obsolete disk folders"},
    }
    cards = cards_with_text(catalog_of(tools), text)
    report = analyse(tools_from_cards(cards), fake_embed, RiftSettings(), model_id="fake")
    assert report.clusters == ()
    assert all(g.clusters == 0 for g in report.comparison)
    assert len(report.points) == 3


def _two_tool_vectors(margin: float) -> dict[str, list[float]]:
    """Card vectors at cosine 0.8 and probes whose margin is exactly ``margin``.

    v_a = (cos α, sin α), v_b = (cos α, −sin α) with cos 2α = 0.8. A probe
    (x, y) has cos(q, v_a) − cos(q, v_b) = 2 y sin α, so y = margin / (2 sin α).
    """
    alpha = math.acos(0.8) / 2
    y = margin / (2 * math.sin(alpha))
    x = math.sqrt(1 - y * y)
    return {
        "card a": [math.cos(alpha), math.sin(alpha), 0.0],
        "card b": [math.cos(alpha), -math.sin(alpha), 0.0],
        "probe a": [x, y, 0.0],
        "probe b": [x, -y, 0.0],
    }


def _two_tools(server_b: str = "s") -> list[RiftTool]:
    return [
        RiftTool("s", "a", "card a", Probe("probe a", "arguments")),
        RiftTool(server_b, "b", "card b", Probe("probe b", "arguments")),
    ]


@pytest.mark.parametrize(
    ("margin", "risk"),
    [(-0.08, "HIGH"), (-0.02, "MEDIUM"), (0.005, "MEDIUM"), (0.25, "MEDIUM"), (0.40, "LOW")],
)
def test_two_tool_cluster_with_constructed_margin_lands_in_its_band(
    margin: float, risk: str
) -> None:
    embed = explicit_embed(_two_tool_vectors(margin))
    report = analyse(_two_tools(), embed, RiftSettings(), model_id="explicit")
    (only,) = report.clusters
    assert only.cohesion == pytest.approx(0.8, abs=1e-5)
    assert only.margin_min == pytest.approx(margin, abs=1e-5)
    assert only.risk == risk
    wrong = [n for n in only.notes if "already picks the wrong tool" in n]
    assert bool(wrong) == (margin < 0)


def _same_argument_tools() -> list[RiftTool]:
    """Two tools with one argument probe; their names point each at its own card."""
    shared = Probe("city name", "arguments")
    return [
        RiftTool("s", "a", "card a", shared, fallbacks=(Probe("alpha city", "name+arguments"),)),
        RiftTool("s", "b", "card b", shared, fallbacks=(Probe("beta city", "name+arguments"),)),
    ]


def _same_argument_vectors(margin: float) -> dict[str, list[float]]:
    vectors = _two_tool_vectors(margin)
    vectors.update({"alpha city": vectors["probe a"], "beta city": vectors["probe b"]})
    return {**vectors, "city name": [1.0, 0.0, 0.0]}


def test_paper_probe_forces_a_non_positive_margin_on_tools_with_the_same_arguments() -> None:
    vectors = _same_argument_vectors(0.30)
    paper = RiftSettings.paper()
    tools = [RiftTool(t.server, t.tool, t.text, t.probe) for t in _same_argument_tools()]
    report = analyse(tools, explicit_embed(vectors), paper, model_id="explicit")
    (only,) = report.clusters
    assert only.margin_min is not None and only.margin_min <= 0.0
    assert only.risk == "HIGH"


def test_default_probe_compares_a_same_argument_pair_on_the_rung_that_separates_it() -> None:
    vectors = _same_argument_vectors(0.40)
    report = analyse(
        _same_argument_tools(), explicit_embed(vectors), RiftSettings(), model_id="explicit"
    )
    (only,) = report.clusters
    assert only.margin_min == pytest.approx(0.40, abs=1e-5)
    assert only.risk == "LOW"
    assert [m.reprobed for m in only.members] == [("s/b",), ("s/a",)]
    assert any("compared with probes that add their names" in n for n in only.notes)


def test_risk_bands_are_configurable() -> None:
    embed = explicit_embed(_two_tool_vectors(0.15))
    strict = RiftSettings(high=0.2, medium=0.3)
    report = analyse(_two_tools(), embed, strict, model_id="explicit")
    assert report.clusters[0].risk == "HIGH"


def test_no_margin_ablation_keeps_clusters_but_assigns_no_risk() -> None:
    embed = explicit_embed(_two_tool_vectors(0.05))
    report = analyse(_two_tools(), embed, RiftSettings(margin=False), model_id="explicit")
    (only,) = report.clusters
    assert only.risk == "UNRATED"
    assert only.margin_min is None
    assert report.at_least("MEDIUM") == ()
    methods = [g.method for g in report.comparison]
    assert methods[0] == "Rift --no-margin"


def test_comparison_table_has_rift_ablation_and_both_baselines() -> None:
    embed = explicit_embed(_two_tool_vectors(-0.08))
    report = analyse(_two_tools(), embed, RiftSettings(), model_id="explicit")
    rows = {g.method: g for g in report.comparison}
    assert rows["Rift (3-layer)"].high == 1
    assert rows["Rift --no-margin"].high == 0 and rows["Rift --no-margin"].medium == 0
    assert rows["Cosine τ=0.65"].clusters == 1
    assert rows["Jaccard J>0.25"].clusters == 1  # "card a" / "card b" share "card"


def test_a_cluster_spanning_two_servers_is_cross_server() -> None:
    embed = explicit_embed(_two_tool_vectors(0.3))
    report = analyse(_two_tools(server_b="t"), embed, RiftSettings(), model_id="explicit")
    assert report.clusters[0].scope == "cross-server"
    assert report.clusters[0].servers == ("s", "t")


def test_complete_linkage_never_groups_a_pair_below_theta_but_cosine_baseline_chains() -> None:
    # a–b and b–c are at cosine 0.7; a–c only at about 0.0.
    angle = math.acos(0.7)
    table = {
        "a": [1.0, 0.0],
        "b": [math.cos(angle), math.sin(angle)],
        "c": [math.cos(2 * angle), math.sin(2 * angle)],
    }
    tools = [RiftTool("s", n, n, Probe(n, "name")) for n in "abc"]
    report = analyse(tools, explicit_embed(table), RiftSettings(), model_id="explicit")
    assert [c.size for c in report.clusters] == [2]
    cosine = next(g for g in report.comparison if g.method.startswith("Cosine"))
    assert cosine.largest == 3


@pytest.mark.parametrize("method", ["complete", "average", "single"])
def test_component_wise_clustering_equals_global_scipy_clustering(method: Linkage) -> None:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(6, 16))
    vectors = np.concatenate([c + 0.35 * rng.normal(size=(8, 16)) for c in centres])
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    ours = {frozenset(g) for g in cluster(vectors, 0.65, method)}
    labels = fcluster(
        linkage(pdist(vectors.astype(np.float64), "cosine"), method=method),
        t=0.35,
        criterion="distance",
    )
    theirs = {
        frozenset(np.flatnonzero(labels == k).tolist())
        for k in set(labels.tolist())
        if np.count_nonzero(labels == k) >= 2
    }
    assert ours == theirs
    assert ours  # the data has clusters to find


def test_every_pair_in_a_complete_linkage_cluster_is_at_least_theta_similar() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(120, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for group in cluster(vectors, 0.65, "complete"):
        sims = vectors[group] @ vectors[group].T
        assert sims.min() >= 0.65 - 1e-5


def test_rank_counts_every_tool_scored_above_the_target() -> None:
    table = _two_tool_vectors(-0.1)
    report = analyse(_two_tools(), explicit_embed(table), RiftSettings(), model_id="explicit")
    ranks = {m.tool: m.rank for m in report.clusters[0].members}
    assert ranks == {"a": 2, "b": 2}


def test_report_points_cover_every_tool_with_its_cluster_risk(fake_embed: EmbedFn) -> None:
    cards = _identical_catalog_cards()
    report = analyse(tools_from_cards(cards), fake_embed, RiftSettings(), model_id="fake")
    assert len(report.points) == 3
    assert {p.risk for p in report.points} == {"HIGH"}
    coords = {(p.x, p.y) for p in report.points}
    assert len(coords) == 3  # identical vectors are fanned out, not stacked
