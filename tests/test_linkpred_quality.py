"""Proposals worth a person's time: typed relation-blind predictions, no mutually exclusive relations
for one pair, calibrated confidence."""

from __future__ import annotations

import numpy as np
import pytest

import kgos
import kgos.linkpred
from kgos.data import demo_file
from kgos.linkpred import link_predictor
from kgos.linkpred.calibration import platt, reliability
from kgos.linkpred.relations import RelationModel, exclusive_relations
from kgos.linkpred.results import Prediction
from kgos.linkpred.triage import merge_near_duplicates, symmetric_relations
from kgos.linkpred.triples import LinkGraph, Triples


@pytest.fixture
def demo(ws: kgos.Workspace) -> kgos.KG:
    ws.import_file("demo", demo_file("cookbook.json"))
    return ws.kg("demo")


def test_exclusive_relations_are_those_never_sharing_a_pair() -> None:
    # a-likes->b and b-knows->a share the pair {a, b}; hates never shares one with either
    t = Triples(np.array([0, 1, 2, 0]), np.array([0, 1, 2, 0]), np.array([1, 0, 3, 3]), ("a", "b", "c", "d"),
                ("likes", "knows", "hates"))
    ex = exclusive_relations(t)
    assert not ex[0, 1] and not ex[1, 0] and ex[0, 2] and ex[2, 1] and not ex.diagonal().any()


def _people_and_food() -> LinkGraph:
    """People know people and like foods: the node types say which relation an edge carries."""
    rng = np.random.default_rng(0)
    people, foods = 30, 10
    rows = [(p, 0, int(q)) for p in range(people) for q in rng.choice(people, 3, replace=False) if q != p]
    rows += [(p, 1, people + int(f)) for p in range(people) for f in rng.choice(foods, 2, replace=False)]
    a = np.array(rows)
    types = np.array([0] * people + [1] * foods)
    t = Triples(a[:, 0], a[:, 1], a[:, 2], tuple(f"e{i}" for i in range(people + foods)), ("knows", "likes"))
    return LinkGraph(t, types, ("person", "food"))


def test_relation_model_types_a_pair_and_its_direction() -> None:
    rm = RelationModel.fit(_people_and_food())
    p = rm.proba(np.array([0, 35, 1]), np.array([35, 0, 2]))  # person->food, food->person, person->person
    nr = 2
    assert p[0].argmax() == 1  # 0 -likes-> 35
    assert p[1].argmax() == nr + 1  # 35 <-likes- 0 (the direction flips, not the relation)
    assert p[2].argmax() in (0, nr + 0)  # knows, one way or the other
    assert np.allclose(p.sum(axis=1), 1.0)


def test_a_relation_blind_run_proposes_each_pair_once_and_never_over_an_existing_edge(demo: kgos.KG) -> None:
    """The issue's example: adamic_adar staged retry_with_backoff -> reliability under six relations,
    although the pair already has contributes_to."""
    report = link_predictor(demo).run(k=30, predictor="adamic_adar")
    t = link_predictor(demo).graph().triples
    ex = link_predictor(demo).ranker().exclusive()
    pairs: dict[frozenset[str], list[int]] = {}
    for p in report.predictions:
        pairs.setdefault(frozenset((p.source, p.target)), []).append(t.relations.index(p.type))
    # before: 30 proposals over 7 pairs; now a pair carries a second relation only when compatible and likely
    assert len(report.predictions) == 30 and len(pairs) >= 25
    assert all(not ex[a, b] for rs in pairs.values() for a in rs for b in rs)
    assert all(0 < p.scores["relation_p"] <= 1 for p in report.predictions)
    assert all(p.scores["relation_p"] >= 0.35 for p in report.predictions
               if len(pairs[frozenset((p.source, p.target))]) > 1)
    for p in report.predictions:  # no proposal contradicts an edge its pair already has
        for nb in demo.neighbors(p.source, limit=500):
            if nb.node.id == p.target:
                assert not ex[t.relations.index(p.type), t.relations.index(nb.edge.type)]
    assert ("technique:retry_with_backoff", "goal:reliability") not in {(p.source, p.target) for p in report.predictions}
    _, pending = demo.proposals.list(limit=100)
    assert len(pending) == 30 and len({frozenset((p.source, p.target)) for p in pending}) == len(pairs)


def test_discovery_keeps_mutually_exclusive_relations_apart(demo: kgos.KG) -> None:
    """Relation-aware predictors rank one pair under several relations: only compatible ones survive."""
    res = link_predictor(demo).discover("technique:retry_with_backoff", k=20, predictor="metapath")
    ex = link_predictor(demo).ranker().exclusive()
    rels = link_predictor(demo).graph().triples.relations
    by_pair: dict[frozenset[str], list[str]] = {}
    for p in res.predictions:
        by_pair.setdefault(frozenset((p.source, p.target)), []).append(p.type)
    for types in by_pair.values():
        codes = [rels.index(x) for x in types]
        assert not any(ex[a, b] for a in codes for b in codes)


# -- calibrated confidence ---------------------------------------------------------------------------------
def test_platt_recovers_a_known_logistic_and_reliability_measures_the_gap() -> None:
    rng = np.random.default_rng(0)
    score = rng.normal(size=4000)
    y = (rng.random(4000) < 1 / (1 + np.exp(-(2 * score - 1)))).astype(float)
    x = np.column_stack([np.ones_like(score), score])
    coef = platt(x, y)
    assert abs(coef[0] + 1) < 0.2 and abs(coef[1] - 2) < 0.25
    ece, _, bins = reliability(1 / (1 + np.exp(-(x @ coef))), y)
    assert ece < 0.03 and sum(b.count for b in bins) == 4000
    overconfident, _, _ = reliability(np.full(1000, 0.9), (np.arange(1000) < 100).astype(float))
    assert overconfident == pytest.approx(0.8)  # 1/rank-style confidences of 0.9 with 10% hits


@pytest.mark.parametrize("name", ["adamic_adar", "metapath"])
def test_calibration_on_withheld_demo_edges_is_within_five_points(demo: kgos.KG, name: str) -> None:
    cal = link_predictor(demo).calibration(name)
    assert cal is not None and cal.withheld == 78 and cal.hits >= 10 and cal.candidates > 500
    assert cal.ece <= 0.05
    assert sum(b.count for b in cal.bins) == cal.candidates
    assert link_predictor(demo).calibration(name) is cal  # kept for the KG version


def test_a_run_stages_calibrated_confidences(demo: kgos.KG) -> None:
    report = link_predictor(demo).run(k=10, predictor="adamic_adar")
    assert report.calibration is not None and report.calibration["ece"] <= 0.05
    confidences = [p.confidence for p in report.predictions]
    assert all(c is not None and 0 < c < 1 for c in confidences)
    _, pending = demo.proposals.list(limit=20)
    by_edge = {(p.source, p.target, p.type): p for p in pending}
    for p in report.predictions:
        staged = by_edge[(p.source, p.target, p.type)]
        assert staged.score == staged.confidence == p.confidence and staged.evidence["calibrated"] is True


# -- the queue's order and near-duplicates -----------------------------------------------------------------
def _pred(s: str, t: str, typ: str, score: float) -> Prediction:
    return Prediction(s, t, typ, score, 1, {}, {}, score)


def test_near_duplicates_are_merged_into_the_better_proposal() -> None:
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0.999, 0.04], [0, 0, 1]], np.float32)  # b and b2 near-identical
    index = {"a": 0, "b": 1, "b2": 2, "c": 3}
    ranked = [_pred("a", "b", "uses", 0.9), _pred("a", "b2", "uses", 0.8), _pred("a", "c", "uses", 0.7),
              _pred("a", "b2", "likes", 0.6), _pred("b", "a", "uses", 0.5), _pred("c", "a", "similar_to", 0.4),
              _pred("a", "c", "similar_to", 0.3)]
    out = merge_near_duplicates(ranked, vectors, index, {"similar_to"})
    assert [(p.source, p.target, p.type) for p in out] == [("a", "b", "uses"), ("a", "c", "uses"),
                                                          ("a", "b2", "likes"), ("b", "a", "uses"),
                                                          ("c", "a", "similar_to")]
    assert out[0].evidence["merged"] == [{"source": "a", "target": "b2", "type": "uses", "score": 0.8, "confidence": 0.8}]
    assert out[4].evidence["merged"][0]["source"] == "a"  # the reverse of a symmetric relation's edge
    assert "merged" not in out[1].evidence


def test_symmetric_relations_are_found_from_reverse_edges() -> None:
    t = Triples(np.array([0, 1, 2, 3, 0, 1, 2]), np.array([0, 0, 0, 0, 1, 1, 1]), np.array([1, 0, 3, 2, 2, 3, 1]),
                ("a", "b", "c", "d"), ("similar_to", "uses"))
    assert symmetric_relations(t) == {"similar_to"}


def test_a_run_scores_priority_and_stages_in_value_order(demo: kgos.KG) -> None:
    report = link_predictor(demo).run(k=15, predictor="adamic_adar")
    values = [p.confidence * p.scores["priority"] for p in report.predictions]
    assert values == sorted(values, reverse=True) and [p.rank for p in report.predictions] == list(range(1, 16))
    assert all(0.25 <= p.scores["priority"] <= 1 and 0 <= p.scores["novelty"] <= 1 for p in report.predictions)
    _, page = demo.proposals.list(limit=15)
    assert [(p.source, p.target, p.type) for p in page] == [(p.source, p.target, p.type) for p in report.predictions]


def test_relation_prior_scores_are_the_relation_models_log_probabilities() -> None:
    g = _people_and_food()
    m = kgos.linkpred.predictor("relation_prior").fit(g)
    p = m.model.proba(np.full(40, 3), np.arange(40))
    assert np.allclose(m.score_tails(np.array([3]), np.array([1]))[0], np.log(p[:, 1]), atol=1e-4)
    assert np.allclose(m.score_heads(np.array([3]), np.array([0]))[0], np.log(p[:, 2]), atol=1e-4)  # c -knows-> 3
    assert "relation_prior" in kgos.linkpred.ensemble.LIGHT_MEMBERS


def test_the_relation_prior_types_adamic_adar_in_the_ensemble(demo: kgos.KG) -> None:
    """Filtered MRR on 10% of the demo's edges withheld: the blind predictor alone, then typed."""
    blind = link_predictor(demo).evaluate("ensemble", holdout=0.1, seed=0, members=["adamic_adar"])
    typed = link_predictor(demo).evaluate("ensemble", holdout=0.1, seed=0, members=["adamic_adar", "relation_prior"])
    assert typed.mrr > 1.5 * blind.mrr  # measured with hash vectors: 0.14 -> 0.24


def test_a_run_never_contradicts_a_proposal_already_pending(demo: kgos.KG) -> None:
    first = link_predictor(demo).run(k=10, predictor="adamic_adar", calibrated=False)
    ex = link_predictor(demo).ranker().exclusive()
    rels = link_predictor(demo).graph().triples.relations
    # a second source stages, for the first run's best pair, a relation exclusive with the one proposed
    top = first.predictions[0]
    other = next(r for r in rels if ex[rels.index(top.type), rels.index(r)])
    demo.proposals.reject(first.queued.added[0])  # the first proposal is decided; the pair is free again
    demo.proposals.propose_edge(top.source, top.target, other, origin="manual", score=0.9)
    second = link_predictor(demo).run(k=30, predictor="adamic_adar", calibrated=False)
    pair = {top.source, top.target}
    assert all(not ex[rels.index(p.type), rels.index(other)] for p in second.predictions
               if {p.source, p.target} == pair)


def test_a_near_duplicate_of_a_pending_proposal_is_folded_into_it(ws: kgos.Workspace) -> None:
    """b and b2 are near-identical (same text, so the same vector). With a -uses-> b2 pending, a run that
    finds a -uses-> b (and, within the run, folds a -uses-> b2 into it) adds it to the pending
    proposal's evidence instead of queueing it beside it."""
    kg = ws.create("dup")
    for nid, name in (("a", "alpha tool"), ("b", "beta widget"), ("b2", "beta widget"), ("c", "gamma"),
                      ("d", "delta"), ("e", "epsilon")):
        kg.add_node(name, type="thing", id=nid, description=f"{name} for tests")
    for s, t in (("a", "c"), ("c", "b"), ("c", "b2"), ("d", "b"), ("d", "b2"), ("a", "d"), ("e", "c")):
        kg.add_edge(s, t, "uses")
    kg.embed("hash")
    alone = link_predictor(kg).run(nodes=["a"], k=5, predictor="adamic_adar", calibrated=False, queue=False)
    best = alone.predictions[0]
    assert (best.source, best.target) == ("a", "b")  # b2 folded into it within the run
    assert [(m["source"], m["target"]) for m in best.evidence["merged"]] == [("a", "b2")]
    pid = kg.proposals.propose_edge("a", "b2", "uses", origin="manual", score=0.5).added[0]
    report = link_predictor(kg).run(nodes=["a"], k=5, predictor="adamic_adar", calibrated=False)
    _, pending = kg.proposals.list(limit=20)
    assert ("a", "b") not in {(p.source, p.target) for p in pending}  # not queued beside a -> b2
    merged = kg.proposals.get(pid).evidence["merged"]
    assert [(m["source"], m["target"], m["type"]) for m in merged] == [("a", "b", "uses")]
    assert pid in report.queued.merged and len(pending) == len(report.queued.added) + 1
