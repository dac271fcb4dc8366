"""The graph methods (impact, trace, similar, explore) against networkx on random graphs, run on
views built straight from arrays (no store), so each case takes milliseconds."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from kgos.methods import structure
from kgos.methods.structure import criticality, explore, impact, similar_rows, similarity_scores, top_k, trace
from kgos.methods.view import view_from_arrays
from kgos.store.arrays import GraphArrays

TYPES = ("enables", "requires", "relates_to")
NODE_TYPES = ("feature", "tool", "goal")
WORDS = ("prompt", "cache", "batch", "cost", "tool", "report", "csv", "agent")


def random_case(seed: int):
    """A random directed multigraph with parallel edges, self loops and isolated nodes, its view, and
    the networkx MultiDiGraph of the same edges."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 50))
    m = int(rng.integers(0, 3 * n))
    used = max(2, n - int(rng.integers(0, 4)))
    src, dst = rng.integers(0, used, m), rng.integers(0, used, m)
    etype = rng.integers(0, len(TYPES), m)
    weight = rng.choice([0.5, 1.0], m).astype(np.float32)
    ntype = rng.integers(0, len(NODE_TYPES), n).astype(np.int32)
    names = [" ".join(rng.choice(WORDS, int(rng.integers(1, 4)))) for _ in range(n)]
    arrays = GraphArrays(node_ids=tuple(f"n{i}" for i in range(n)), node_types=ntype, node_type_names=NODE_TYPES,
                         src=src.astype(np.int32), dst=dst.astype(np.int32), type_code=etype.astype(np.int32),
                         types=TYPES, weight=weight)
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from((int(s), int(d), {"type": TYPES[t], "weight": float(w)}) for s, d, t, w in zip(src, dst, etype, weight))
    return view_from_arrays(arrays, names), G, names


CASES = range(25)


@pytest.mark.parametrize("seed", CASES)
def test_impact_levels_and_risk_match_networkx(seed):
    view, G, _ = random_case(seed)
    D = nx.DiGraph(G)
    views = {"forward": D, "backward": D.reverse(copy=False), "both": D.to_undirected(as_view=True)}
    crit = nx.degree_centrality(D)
    top = max(crit.values())
    for start in range(0, view.n, 7):
        for direction, graph in views.items():
            r = impact(view, start, direction, 3, per_depth=10_000)
            dist = nx.single_source_shortest_path_length(graph, start, cutoff=3)
            expected = {}
            for d in dist.values():
                if d:
                    expected[d] = expected.get(d, 0) + 1
            assert r.counts_by_depth == expected and r.total_impacted == len(dist) - 1
            for level in r.risk_by_depth.values():
                for x in level:
                    row = int(x.node.id[1:])
                    assert dist[row] == x.depth
                    assert x.risk == pytest.approx(x.weight * crit[row] / top / x.depth)
                    assert _has_edge(G, int(x.parent[1:]), row, x.edge_type, x.direction)
            _check_critical_path(r, G)


def _has_edge(G, a: int, b: int, edge_type: str, direction: str) -> bool:
    s, t = (a, b) if direction == "forward" else (b, a)
    return any(d["type"] == edge_type for d in G.get_edge_data(s, t, default={}).values())


def _check_critical_path(r, G) -> None:
    path = [int(x.id[1:]) for x in r.critical_path]
    assert path[0] == int(r.node.id[1:])
    U = nx.Graph(G.to_undirected())
    assert all(U.has_edge(a, b) for a, b in itertools.pairwise(path))


@pytest.mark.parametrize("seed", CASES)
def test_trace_lengths_match_networkx(seed):
    view, G, _ = random_case(seed)
    U = nx.Graph(G.to_undirected())
    for a in range(0, view.n, 5):
        for b in range(1, view.n, 6):
            r = trace(view, a, b, 5)
            length = nx.shortest_path_length(U, a, b) if nx.has_path(U, a, b) else None
            if length is None or length > 5:
                assert (r.found, r.length, r.path) == (False, None, ())
                continue
            assert (r.found, r.length) == (True, length)
            rows = [int(s.node.id[1:]) for s in r.path]
            assert rows[0] == a and rows[-1] == b
            for prev, step in zip(rows, r.path[1:]):
                assert _has_edge(G, prev, int(step.node.id[1:]), step.edge_type, step.direction)


@pytest.mark.parametrize("seed", CASES)
@pytest.mark.parametrize("dense_ratio", [0, structure.DENSE_TOUCH_RATIO])  # 0: the sparse path always
def test_similarity_parts_match_networkx(seed, dense_ratio, monkeypatch):
    monkeypatch.setattr(structure, "DENSE_TOUCH_RATIO", dense_ratio)
    view, G, names = random_case(seed)
    U = nx.Graph(G.to_undirected())
    for node in range(0, view.n, 4):
        score, jac, same, overlap = similarity_scores(view, node)
        expected = {v: p for _, v, p in nx.jaccard_coefficient(U, [(node, v) for v in range(view.n)])}
        assert jac == pytest.approx([expected[v] for v in range(view.n)])
        words = [set(x.split()) for x in names]
        assert overlap == pytest.approx([len(words[node] & w) / len(words[node] | w) for w in words])
        assert same.tolist() == (view.node_types == view.node_types[node]).astype(float).tolist()
        for k in (5, view.n):  # all of them: the same-type nodes sharing nothing come last, by row
            rows = similar_rows(view, node, k)
            assert all(int(x.node.id[1:]) != node for x in rows)
            scored = sorted((-score[v], v) for v in range(view.n) if v != node and score[v] > 0)[:k]
            assert [int(x.node.id[1:]) for x in rows] == [v for _, v in scored]
            assert [x.score for x in rows] == [-s for s, _ in scored]
            assert [(x.jaccard, x.name_overlap) for x in rows] == [(jac[v], overlap[v]) for _, v in scored]


@pytest.mark.parametrize("seed", CASES)
def test_explore_matches_networkx(seed):
    view, G, _ = random_case(seed)
    D = nx.DiGraph(G)
    dc = nx.degree_centrality(D)
    U = D.to_undirected(as_view=True)
    start = seed % view.n
    tree = explore(view, start, 2, per_level=10_000)
    dist = nx.single_source_shortest_path_length(U, start, cutoff=2)
    for level in tree.levels:
        assert {int(x.node.id[1:]) for x in level.nodes} == {v for v, d in dist.items() if d == level.depth}
        for x in level.nodes:
            row = int(x.node.id[1:])
            assert x.degree_centrality == pytest.approx(dc[row])
            types = {d["type"] for _, _, d in G.in_edges(row, data=True)} | {d["type"] for _, _, d in G.out_edges(row, data=True)}
            assert x.edge_diversity == len(types)
        degrees = [x.degree for x in level.nodes]
        mean = float(np.mean(degrees)) if degrees else 0.0
        assert level.mean_degree == pytest.approx(mean)
        if level.depth:
            assert [x.is_hub for x in level.nodes] == [d > 2 * mean for d in degrees]


def test_criticality_is_scaled_degree_centrality():
    view, G, _ = random_case(3)
    dc = nx.degree_centrality(nx.DiGraph(G))
    top = max(dc.values())
    assert criticality(view) == pytest.approx([dc[v] / top for v in range(view.n)])


def test_top_k_breaks_ties_by_index():
    scores = np.array([0.0, 0.5, 0.9, 0.5, 0.5, 0.1])
    assert top_k(scores, 3).tolist() == [2, 1, 3]
    assert top_k(scores, 10).tolist() == [2, 1, 3, 4, 5]
    assert top_k(np.zeros(4), 2).tolist() == []
