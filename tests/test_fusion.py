"""Fusion (issue 13, lever 4): per-query normalisation, query-dependent weights, Rocchio feedback and
graph propagation; every hit's displayed score is the score it was ranked by."""

from __future__ import annotations

import numpy as np
import pytest

from kgos.data import load_demo
from kgos.errors import InvalidArgument
from kgos.eval.ablation import ABLATION, engine_for, merged, spec_options
from kgos.retrieval import hybrid as H
from kgos.retrieval.hybrid import SearchOptions

QUERIES = ("rate limits", "reduce costs", "image tokens", "prompt caching", "process thousands of documents")
VARIANTS = [{}, {"norm": "max"}, {"norm": "minmax"}, {"norm": "zscore"}, {"norm": "rank"},
            {"margin_power": 1.0}, {"prf": 3}, {"propagate": 0.5, "propagate_seeds": 5}, {"use_graph": False},
            {"use_intent": False}, {"diversity": False},
            {"solution_gate": "linear", "solution_edges": "uniform"}, {"solution_hop": 0.7}]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    import kgos
    ws = kgos.Workspace(tmp_path_factory.mktemp("fusion"))
    load_demo(ws, embedder="hash")
    yield ws.kg("demo")
    ws.close()


def recomputed(hit, w, o: SearchOptions) -> float:
    """The hybrid formula from what the hit shows: weights x components + the issue-13 terms."""
    c = hit.components
    return (w.embedding * c.embedding + w.text * c.text + w.graph * c.graph + w.intent * c.intent
            + o.name_weight * c.name + o.solution_hop * c.solution + o.propagate * c.propagation)


@pytest.mark.parametrize("options", VARIANTS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_every_displayed_score_is_the_score_it_was_ranked_by(demo, options):
    engine = engine_for(demo, {"options": options} if options else {})
    o = SearchOptions(**options)
    for query in QUERIES:
        res = engine.search(query, k=10)
        scores = [h.score for h in res.results]
        assert scores == sorted(scores, reverse=True), query  # ranked by exactly what is shown
        for h in res.results:
            raw = recomputed(h, res.weights, o)
            assert h.score == pytest.approx(raw + h.diversity_bonus, rel=1e-5, abs=1e-6), (query, h.node.id)
            assert h.diversity_bonus in (0.0, pytest.approx(0.05 * raw, rel=1e-4))


def test_the_diversity_rerank_is_in_the_score_under_the_defaults(demo):
    reordered = 0
    for query in QUERIES:
        res = demo.search(query, k=10)
        raw = [h.score - h.diversity_bonus for h in res.results]
        reordered += raw != sorted(raw, reverse=True)
        assert [h.rank for h in res.results] == list(range(1, len(res.results) + 1))
    assert reordered  # at least one query where the +5% changed the order, and its scores still descend


def test_spec_formula_has_none_of_the_fusion_additions(demo):
    spec = SearchOptions.spec()
    assert (spec.norm, spec.propagate) == ("max", 0.0)
    assert spec_options()["norm"] == "max" and dict(ABLATION)["spec formula (spec/001 1.2-1.8)"]["options"] == spec_options()
    res = engine_for(demo, {"options": spec_options()}).search("reduce costs")
    assert "fusion-weighted" not in res.weights.source
    assert all(h.components.propagation == 0 for h in res.results)


def test_topk_resplits_alpha_and_beta_by_their_top10_means(demo):
    base = engine_for(demo, {"options": {"norm": "max", "propagate": 0.0}}).search("reduce costs")
    topk = engine_for(demo, {"options": {"propagate": 0.0}}).search("reduce costs")
    assert topk.weights.source.endswith("(fusion-weighted)")
    snap, engine = demo.engine.snapshot(), demo.engine
    emb = H.embedding_signal(snap, engine.embed_query("reduce costs"))
    text = H.bm25_signal(snap, "reduce costs", topk.intent.name, coord=SearchOptions().coord)
    ratio = (base.weights.embedding / H.top_mean(emb)) / (base.weights.text / H.top_mean(text))
    assert topk.weights.embedding / topk.weights.text == pytest.approx(ratio, rel=1e-4)
    assert topk.weights.embedding + topk.weights.text == pytest.approx(base.weights.embedding + base.weights.text)
    assert (topk.weights.graph, topk.weights.intent) == (base.weights.graph, base.weights.intent)
    assert all(0.0 <= h.components.embedding <= 1.0 and 0.0 <= h.components.text <= 1.0 for h in topk.results)


def test_explicit_weights_are_used_as_given(demo):
    res = demo.search("reduce costs", weights="0.5,0.5,0,0")
    assert res.weights.as_tuple() == pytest.approx((0.5, 0.5, 0, 0)) and res.weights.source == "explicit"


def test_without_graph_no_edge_derived_term_is_added(demo):
    res = engine_for(demo, {"options": {"use_graph": False}}).search("process thousands of documents")
    assert res.weights.graph == 0
    assert all(h.components.solution == 0 and h.components.propagation == 0 for h in res.results)
    full = demo.search("process thousands of documents")
    assert any(h.components.propagation > 0 for h in full.results)


def test_without_intent_delta_is_zero_and_the_rest_keeps_its_total(demo):
    on = engine_for(demo, {"options": {"norm": "max", "propagate": 0.0}}).search("how to chain steps in a pipeline")
    off = engine_for(demo, {"options": {"norm": "max", "propagate": 0.0, "use_intent": False}}).search(
        "how to chain steps in a pipeline")
    assert on.weights.intent > 0 and off.weights.intent == 0
    assert sum(off.weights.as_tuple()) == pytest.approx(sum(on.weights.as_tuple()))


def test_rescale_variants():
    x = np.array([0.0, 1.0, 0.5, 0.25, 0.75], np.float32)
    minmax = H.rescale(x, "minmax", 4)
    assert minmax[1] == pytest.approx(1.0) and minmax[3] == 0 and minmax[2] == pytest.approx(1 / 3)
    rank = H.rescale(x, "rank", 10)
    assert rank[1] == pytest.approx(1.0) and rank[4] == pytest.approx(61 / 62) and rank[0] == 0
    z = H.rescale(x, "zscore", 10)
    assert z[1] > z[4] > 0 and z[3] == 0 and np.all(z >= 0)
    assert H.rescale(x, "max", 4) is x and H.rescale(x, "topk", 4) is x
    assert H.rescale(np.zeros(3, np.float32), "minmax", 4).sum() == 0


def test_margin_is_how_far_the_top_stands_out():
    flat, peaked = np.full(20, 0.5, np.float32), np.r_[1.0, np.full(19, 0.1)].astype(np.float32)
    assert H.margin(flat) == pytest.approx(0.0) and H.margin(peaked) == pytest.approx(0.9)
    assert H.margin(None) == 0.0


def test_rocchio_moves_the_query_toward_the_top_hits(demo):
    snap = demo.engine.snapshot()
    q = np.asarray(demo.engine.embed_query("reduce costs"), np.float32)
    total = np.zeros(snap.n, np.float32)
    total[[3, 5]] = [1.0, 0.5]
    moved = H.rocchio(snap, q, total, SearchOptions(prf=2, prf_weight=0.5))
    centroid = np.asarray(snap.vectors[[3, 5]]).mean(axis=0)
    assert np.linalg.norm(moved) == pytest.approx(1.0, abs=1e-5)
    assert moved @ centroid > q @ centroid / np.linalg.norm(q)


def test_propagation_passes_the_top_scores_to_neighbours(demo):
    snap = demo.engine.snapshot()
    total = np.zeros(snap.n, np.float32)
    total[0] = 1.0
    out = H.propagation(snap, total, 1)
    nb = snap.graph.neighbors_of(np.array([0]), "both")
    assert set(np.flatnonzero(out)) <= set(nb.node.tolist()) and out.max() <= 1.0 and out.max() > 0


@pytest.mark.parametrize("bad", [{"norm": "softmax"}, {"norm_depth": 1}, {"prf": -1}, {"propagate_seeds": 0}])
def test_bad_fusion_options_are_refused(demo, bad):
    with pytest.raises(InvalidArgument):
        engine_for(demo, {"options": bad}).search("reduce costs")


def test_ablation_rows_merge_the_base_options():
    row = merged({"options": {"name_weight": 0}}, {"mode": "hybrid", "options": {"use_graph": False}})
    assert row == {"mode": "hybrid", "options": {"name_weight": 0, "use_graph": False}}
    assert merged(None, {"mode": "bm25"}) == {"mode": "bm25"}
    labels = [label for label, _ in ABLATION]
    assert {"default without the graph signal", "default without the intent signal"} <= set(labels)
