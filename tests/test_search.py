"""Hybrid search end to end on a small KG with known answers (real SQLite, hashing embedder)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import kgos
from kgos.errors import InvalidArgument
from kgos.index import snapshot as snapshots
from kgos.retrieval.hybrid import MODES, SearchOptions
from kgos.retrieval.intents import KGOS_PROFILES
from kgos.retrieval.results import SIGNALS


@pytest.fixture
def kg(ws):
    g = ws.create("t")
    add = g.add_node
    add("Prompt caching", "feature", "Reuse a cached prompt prefix across requests.", id="caching")
    add("Batch API", "feature", "Submit many requests asynchronously at half price.", id="batch")
    add("Cost reduction", "goal", "Spend less money on model calls.", id="cost")
    add("Token savings", "benefit", "Fewer billed input tokens.", id="tokens")
    add("Cache minimum length", "limitation", "Prefixes shorter than a threshold are not cached.", id="minlen")
    add("Pad the prefix", "workaround", "Add stable context to reach the minimum.", id="pad")
    add("Streaming", "feature", "Receive tokens as they are generated.", id="stream")
    add("Isolated note", "concept", "Nothing links here.", id="alone")
    e = g.add_edge
    e("caching", "tokens", "enables")
    e("tokens", "cost", "contributes_to")
    e("batch", "cost", "optimizes")
    e("caching", "minlen", "has_limitation")
    e("caching", "pad", "has_workaround")
    e("stream", "batch", "alternative_to")
    return g


def ids(result) -> list[str]:
    return [h.node.id for h in result.results]


def test_fts_channel_is_optional_in_the_hybrid(kg):
    from kgos.retrieval.engine import SearchEngine
    from kgos.retrieval.hybrid import SearchOptions
    with_fts = SearchEngine(kg.store, options=SearchOptions(fts=True)).search("prompt prefix caching")
    without = kg.search("prompt prefix caching")
    assert ids(with_fts)[0] == ids(without)[0] == "caching"
    assert not any("FTS5" in n for n in without.notes)


def test_text_signal_ranks_the_named_node_first(kg):
    for mode in ("bm25", "fts", "text"):
        res = kg.search("prompt caching", mode=mode)
        assert ids(res)[0] == "caching", mode
        assert res.results[0].components.text == pytest.approx(1.0)


def test_embedding_signal_with_hashing_embedder(kg):
    report = kg.embed("hash")
    assert (report.nodes, report.embedded) == (8, 8)
    res = kg.search("Receive tokens as they are generated", mode="embedding")
    assert ids(res)[0] == "stream" and res.results[0].components.embedding == pytest.approx(1.0)
    assert kg.embed("hash").embedded == 0  # unchanged text is not embedded again
    kg.update_node("alone", description="Receive tokens as they are generated, too.")
    assert kg.embed("hash").embedded == 0  # the changed text was embedded on write


def test_graph_signal_follows_typed_edges_from_seeds(kg):
    res = kg.search("prompt caching", mode="graph", k=8)
    graph = {h.node.id: h.components.graph for h in res.results}
    # enables (0.9) out of the seed beats has_workaround (0.4) beats has_limitation (0.3)
    assert graph["tokens"] > graph["pad"] > graph["minlen"] > 0
    assert "alone" not in graph


def test_intent_signal_forward_and_backward(kg):
    # goal_based follows enables/provides/...: caching -enables-> tokens scores +1.0 forward
    res = kg.search("prompt caching", intent="goal_based", k=8)
    intent = {h.node.id: h.components.intent for h in res.results}
    assert intent["tokens"] == pytest.approx(1.0)
    assert intent.get("minlen", 0.0) == 0.0  # has_limitation is not a goal_based edge type


def test_score_is_the_weighted_sum_of_normalised_components(kg):
    kg.embed("hash")
    res = kg.search("prompt caching cost", weights="0.3,0.4,0.2,0.1", k=8)
    assert res.weights.as_tuple() == pytest.approx((0.3, 0.4, 0.2, 0.1))
    for h in res.results:
        c = h.components
        o = SearchOptions()  # + the issue-13 terms: solution hops, name signal, propagation, each with its weight
        raw = (0.3 * c.embedding + 0.4 * c.text + 0.2 * c.graph + 0.1 * c.intent
               + o.solution_hop * c.solution + o.name_weight * c.name + o.propagate * c.propagation)
        assert h.score == pytest.approx(raw + h.diversity_bonus, rel=1e-5)  # the bonus is part of the score
        assert h.diversity_bonus in (0.0, pytest.approx(0.05 * raw))
        assert all(0.0 <= getattr(c, s) <= 1.0 for s in SIGNALS)
        assert h.method == "+".join(s for s in SIGNALS if getattr(c, s) > 0)


def test_weight_precedence_and_fallback_without_vectors(kg):
    res = kg.search("I want to reduce costs")
    assert res.intent.name == "goal_based" and res.weights.source.startswith("kgos:goal_based (no vectors")
    a, b, g, d = KGOS_PROFILES["goal_based"]
    assert res.weights.as_tuple() == pytest.approx((0.0, b / (b + g + d), g / (b + g + d), d / (b + g + d)))
    assert any("no node vectors" in w for w in res.warnings) and res.to_dict()["warnings"] == list(res.warnings)
    kg.embed("hash")
    w = kg.search("I want to reduce costs").weights  # norm "topk": alpha + beta re-split, their sum kept
    assert w.source.startswith("kgos:goal_based") and w.as_tuple()[2:] == pytest.approx(KGOS_PROFILES["goal_based"][2:])
    assert sum(w.as_tuple()[:2]) == pytest.approx(sum(KGOS_PROFILES["goal_based"][:2]))
    assert kg.search("I want to reduce costs").warnings == ()
    assert kg.search("I want to reduce costs", weights=[1, 1, 0, 0]).weights.source == "explicit"


def test_edge_annotations_explain_graph_hits(kg):
    res = kg.search("prompt caching", mode="graph", k=8)
    tokens = next(h for h in res.results if h.node.id == "tokens")
    assert [(a.source, a.target, a.type, a.direction, a.other) for a in tokens.edge_annotations][0] == \
        ("caching", "tokens", "enables", "incoming", "caching")


def test_write_invalidates_cache_and_snapshot(kg):
    first = kg.search("quantum widget")
    assert kg.search("quantum widget") is first  # served from the query cache
    kg.add_node("Quantum widget", "concept", id="qw")
    again = kg.search("quantum widget")
    assert again is not first and ids(again)[0] == "qw"
    kg.delete_node("qw")
    assert "qw" not in ids(kg.search("quantum widget"))


def test_snapshot_is_persisted_and_reloaded(ws, kg):
    built = snapshots.build(kg.store, kg.engine.text, None, ws.cache_dir)
    loaded = snapshots.build(kg.store, kg.engine.text, None, ws.cache_dir)
    assert built.build_seconds > 0 and loaded.build_seconds == 0.0
    assert loaded.node_ids == built.node_ids
    assert (loaded.text.matrix != built.text.matrix).nnz == 0
    with kgos.Workspace(ws.home) as other:  # another process sees the same file and cache
        assert ids(other.kg("t").search("prompt caching"))[0] == "caching"


def test_vectors_are_memory_mapped_from_the_snapshot_cache(ws, kg):
    kg.embed("hash")
    first = kg.search("Receive tokens as they are generated", mode="embedding")
    with kgos.Workspace(ws.home) as other:
        again = other.kg("t")
        res = again.search("Receive tokens as they are generated", mode="embedding")
        assert isinstance(again.engine.snapshot().vectors, np.memmap)
        assert ids(res) == ids(first)
    kg.update_node("alone", description="Receive tokens as they are generated, again.")
    kg.embed("hash")  # new vectors bump the version: the stale cached matrix is not used
    assert "alone" in ids(kg.search("Receive tokens as they are generated", mode="embedding", k=3))


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_answers(kg, mode):
    kg.embed("hash")
    query = "Prompt caching" if mode == "names" else "cheaper prompt caching"  # names: whole names only
    res = kg.search(query, mode=mode, k=5)
    assert res.mode == mode and 0 < len(res.results) <= 5
    scores = [h.score for h in res.results]
    assert scores == sorted(scores, reverse=True)  # the shown score is the ranking score in every mode


@pytest.mark.parametrize("query", ["the of and", "!!! ???", '"unbalanced', "NEAR(a b", "a AND OR NOT *",
                                   "日本語のテキスト", "x" * 10_000, "caching " * 2000])
def test_odd_queries_never_raise(kg, query):
    res = kg.search(query)
    assert isinstance(res.results, tuple)


@pytest.mark.parametrize("kwargs,message", [
    ({"query": ""}, "empty"), ({"query": "   "}, "empty"), ({"query": "x", "k": 0}, "k must"),
    ({"query": "x", "k": -3}, "k must"), ({"query": "x", "intent": "telepathy"}, "unknown intent"),
    ({"query": "x", "weights": "-1,1,1,1"}, "non-negative"), ({"query": "x", "mode": "magic"}, "unknown mode"),
])
def test_bad_arguments_are_clear_errors(kg, kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        kg.search(**kwargs)


def test_kg_without_edges_descriptions_or_vectors(ws):
    g = ws.create("bare")
    for name in ("alpha beta", "beta gamma", "delta"):
        g.add_node(name)
    res = g.search("beta")
    assert sorted(ids(res)) == ["entity:alpha_beta", "entity:beta_gamma"]
    assert all(h.components.graph == 0 for h in res.results)
    assert ws.create("empty").search("anything").results == ()


def test_multi_kg_search_dedups_by_name_keeping_higher_score(ws, kg):
    other = ws.create("u")
    other.add_node("Prompt caching", "feature", id="pc2")
    other.add_node("Prompt caching tips and prompt caching tricks", "feature", id="tips")
    res = ws.search(["t", "u"], "prompt caching", k=10)
    by_name = {}
    for h in res.results:
        by_name.setdefault(h.node.name.lower(), []).append(h)
    assert all(len(v) == 1 for v in by_name.values())
    assert {h.source_kg for h in res.results} == {"t", "u"}
    assert [h.rank for h in res.results] == list(range(1, len(res.results) + 1))


def test_search_on_attached_foreign_kg(ws, tmp_path):
    path = tmp_path / "legacy.db"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE nodes (id TEXT PRIMARY KEY, name TEXT, type TEXT);
        CREATE TABLE edges (source TEXT, target TEXT, type TEXT);
        INSERT INTO nodes VALUES ('a', 'Prompt caching', 'feature'), ('b', 'Cost reduction', 'goal');
        INSERT INTO edges VALUES ('a', 'b', 'enables');""")
    conn.commit()
    conn.close()
    g = ws.attach("legacy", path)
    assert ids(g.search("prompt caching", k=2)) == ["a", "b"]
    res = g.search("prompt caching", k=2, mode="text")  # the FTS5 channel needs a native file
    assert ids(res)[0] == "a" and any("FTS5" in n for n in res.notes)
    assert g.embed("hash").embedded == 2  # vectors go to a sidecar: the foreign file is not written
    with kgos.Workspace(ws.home) as other:  # the embedder choice is remembered in workspace.db
        res = other.kg("legacy").search("Cost reduction", mode="embedding", k=1)
        assert ids(res) == ["b"] and res.results[0].components.embedding == pytest.approx(1.0)


def test_result_json_shape(kg):
    d = kg.search("prompt caching", k=2).to_dict()
    assert set(d) >= {"query", "intent", "weights", "results"}
    hit = d["results"][0]
    assert set(hit) >= {"node", "score", "components", "method", "edge_annotations"}
    assert set(hit["components"]) == {"embedding", "text", "graph", "intent", "name", "solution",
                                         "propagation"}  # + issue 13
    assert set(d["weights"]) >= {"alpha", "beta", "gamma", "delta"}


def test_displayed_score_is_the_ranking_score_with_the_diversity_bonus(ws):
    """spec/001 1.8's +5% for the first hit of each community reorders hits: it is part of ``score``
    (shown as ``diversity_bonus``), so scores never increase down the list."""
    from kgos.data import load_demo
    load_demo(ws, embedder=None)
    for query in ("caching tokens", "tool use", "streaming responses", "long documents", "rate limits"):
        res = ws.kg("demo").search(query, k=10)
        scores = [h.score for h in res.results]
        assert scores == sorted(scores, reverse=True)
        raw = [h.score - h.diversity_bonus for h in res.results]
        if raw != sorted(raw, reverse=True):
            break  # a query the bonus reorders
    else:
        pytest.fail("none of the queries is reordered by the diversity bonus")
    boosted = [h for h in res.results if h.diversity_bonus > 0]
    assert boosted and all(h.diversity_bonus == pytest.approx(0.05 * (h.score - h.diversity_bonus)) for h in boosted)
    assert res.to_dict()["results"][0]["diversity_bonus"] == pytest.approx(boosted[0].diversity_bonus, abs=1e-6)
