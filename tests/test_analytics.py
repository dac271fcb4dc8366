"""Graph analytics (critical components, bottlenecks, communities, gaps) against networkx and on a
hand-built KG with known gaps."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from conftest import write_nodelink
from test_methods_graph import random_case

import kgos
from kgos.errors import InvalidArgument
from kgos.methods import analytics
from kgos.methods.analytics import betweenness, bottlenecks, centrality, communities


@pytest.mark.parametrize("seed", range(12))
def test_centralities_match_networkx(seed):
    view, G, _ = random_case(seed)
    U = nx.Graph(G.to_undirected())
    U.remove_edges_from(nx.selfloop_edges(U))
    bc, method = betweenness(view)
    expected = nx.betweenness_centrality(U)
    assert method == "exact" and bc == pytest.approx([expected[v] for v in range(view.n)], abs=1e-12)
    degree = centrality(view, "degree", k=view.n)
    dc = nx.degree_centrality(nx.DiGraph(G))
    assert [x.score for x in degree.results] == pytest.approx(sorted(dc.values(), reverse=True))
    ranks = [x.rank for x in degree.results]
    assert ranks == list(range(1, view.n + 1))
    if G.number_of_edges() >= 20:
        pr = nx.pagerank(G, weight=None)  # KG-OS PageRank ignores edge weights, as spec/001 1.6 does
        top = centrality(view, "pagerank", k=3).results
        assert [x.score for x in top] == pytest.approx(sorted(pr.values(), reverse=True)[:3], abs=1e-6)


@pytest.mark.parametrize("seed", range(12))
def test_bottlenecks_are_articulation_points(seed):
    view, G, _ = random_case(seed)
    U = nx.Graph(G.to_undirected())
    r = bottlenecks(view, k=view.n)
    assert {int(x.node.id[1:]) for x in r.results} == set(nx.articulation_points(U))
    assert all(x.articulation for x in r.results)
    scores = [x.score for x in r.results]
    assert scores == sorted(scores, reverse=True)


def test_communities_partition_the_graph():
    view, G, _ = random_case(7)
    r = communities(view, k=1000)
    assert sum(c.size for c in r.communities) == view.n == sum(1 for _ in G.nodes)
    U = nx.Graph(G.to_undirected())
    U.remove_edges_from(nx.selfloop_edges(U))
    labels = view.graph.communities()
    parts = [set(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels)]
    assert r.modularity == pytest.approx(nx.community.modularity(U, parts, weight=None))
    sizes = [c.size for c in r.communities]
    assert sizes == sorted(sizes, reverse=True)
    internal = sum(c.internal_edges for c in r.communities)
    crossing = sum(c.external_edges for c in r.communities) // 2
    assert internal + crossing == U.number_of_edges()


def test_large_graphs_sample_betweenness(monkeypatch):
    view, G, _ = random_case(11)
    monkeypatch.setattr(analytics, "EXACT_BETWEENNESS_NODES", 5)
    monkeypatch.setattr(analytics, "SAMPLED_SOURCES", view.n)  # every node a source: must equal exact
    bc, method = analytics._betweenness(view)
    assert method.startswith("sampled")
    U = nx.Graph(G.to_undirected())
    U.remove_edges_from(nx.selfloop_edges(U))
    expected = nx.betweenness_centrality(U)
    assert bc == pytest.approx([expected[v] for v in range(view.n)], abs=1e-12)


def test_bad_metric():
    view, _, _ = random_case(1)
    with pytest.raises(InvalidArgument):
        centrality(view, "closeness")


@pytest.fixture(scope="module")
def kg(tmp_path_factory):
    folder = tmp_path_factory.mktemp("analytics")
    nodes = [{"id": i, "name": i.split(":")[1].title(), "type": i.split(":")[0], "description": d, "properties": p}
             for i, d, p in [("feature:hub", "the hub", {"pricing_tier": 0.2}), ("feature:a", "a", {}),
                             ("feature:b", "b", {"batch_suitability": 0.9}), ("limitation:l1", "fixed", {}),
                             ("limitation:l2", "open", {}), ("workaround:w1", "fix", {}),
                             ("concept:orphan", "", {}), ("concept:x", "x", {}), ("concept:y", "y", {})]]
    edges = [("feature:hub", "feature:a", "requires"), ("feature:hub", "feature:b", "requires"),
             ("feature:a", "limitation:l1", "has_limitation"), ("workaround:w1", "limitation:l1", "fixes"),
             ("feature:b", "limitation:l2", "has_limitation"), ("concept:x", "concept:y", "relates_to")]
    path = write_nodelink(folder / "g.json", nodes, [{"source": s, "target": t, "type": y} for s, t, y in edges])
    ws = kgos.Workspace(folder / "home")
    ws.import_file("gaps", path)
    yield ws.kg("gaps")
    ws.close()


def test_gaps_report(kg):
    r = kg.analytics.gaps()
    assert [n.id for n in r.orphans] == ["concept:orphan"] and r.orphan_count == 1
    assert r.components == 3
    assert [[n.id for n in c] for c in r.small_components] == [["concept:x", "concept:y"]]
    assert [n.id for n in r.unmitigated_limitations] == ["limitation:l2"]
    assert [n.id for n in r.without_dimensions] == ["feature:a"] and r.without_dimensions_count == 1
    assert r.without_description_count == 1


def test_kg_level_analytics(kg):
    top = kg.analytics.centrality("degree", k=1).results[0]
    assert (top.node.id, top.degree) == ("feature:hub", 2)
    assert {x.node.id for x in kg.analytics.bottlenecks().results} == {"feature:hub", "feature:a", "feature:b", "limitation:l1"}
    assert kg.analytics.communities().count >= 3
    assert kg.analytics.centrality("combined", k=2).method == "exact"
