"""GraphIndex: hand-checked scores (spec/001 1.6, 1.7; spec/000 method 12) and networkx agreement."""

from __future__ import annotations

import itertools
import mmap
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from kgos.errors import IndexDamaged, InvalidArgument
from kgos.index.graph import GraphIndex
from kgos.store.arrays import GraphArrays

TYPES = ("has_limitation", "implements", "relates_to", "zzz")  # zzz: not in the weight table
WEIGHTS = {"implements": 1.0, "relates_to": 0.5, "has_limitation": 0.3}


def arrays(n: int, edges: list[tuple[int, int, str]], types: tuple[str, ...] = TYPES,
           weight: list[float] | None = None) -> GraphArrays:
    src, dst, t = zip(*edges) if edges else ((), (), ())
    return GraphArrays(
        node_ids=tuple(f"n{i}" for i in range(n)), node_types=np.zeros(n, np.int32), node_type_names=("x",),
        src=np.array(src, np.int32), dst=np.array(dst, np.int32),
        type_code=np.array([types.index(x) for x in t], np.int32), types=types,
        weight=np.array(weight if weight is not None else [1.0] * len(edges), np.float32))


# seeds are 0 and 1 in the hand-checked tests
HAND = [(0, 1, "implements"), (0, 1, "has_limitation"), (0, 2, "relates_to"), (3, 0, "implements"),
        (1, 4, "zzz"), (5, 1, "has_limitation"), (2, 6, "implements"), (6, 7, "relates_to"),
        (4, 4, "relates_to")]
# 1-hop proximity by hand (out x1.0, in x0.7, summed over edges and seeds):
#   1: out of 0 via implements + has_limitation = 1.0 + 0.3 = 1.3
#   0: into 1 via the same two edges = (1.0 + 0.3) * 0.7 = 0.91
#   2: out of 0 relates_to 0.5; 4: out of 1 zzz -> default 0.5
#   3: into 0 implements 0.7; 5: into 1 has_limitation 0.3 * 0.7 = 0.21
PROX = {0: 0.91, 1: 1.3, 2: 0.5, 3: 0.7, 4: 0.5, 5: 0.21}


@pytest.fixture
def hand() -> GraphIndex:
    return GraphIndex.build(arrays(8, HAND))


def as_dict(result: tuple[np.ndarray, np.ndarray]) -> dict[int, float]:
    cands, scores = result
    assert np.all(np.diff(scores) <= 0), "sorted by score, best first"
    return {int(c): float(s) for c, s in zip(cands, scores)}


def assert_scores(result: tuple[np.ndarray, np.ndarray], expected: dict[int, float]) -> None:
    got = as_dict(result)
    assert got.keys() == expected.keys()
    top = max(expected.values())
    for k, v in expected.items():
        assert got[k] == pytest.approx(v / top, abs=1e-12), k


def test_type_weight_vector_defaults_to_relates_to(hand: GraphIndex) -> None:
    assert hand.type_weight_vector(WEIGHTS).tolist() == [0.3, 1.0, 0.5, 0.5]
    assert hand.type_weight_vector(WEIGHTS, default=0.1).tolist() == [0.3, 1.0, 0.5, 0.1]


def test_graph_boost_one_hop_proximity(hand: GraphIndex) -> None:
    tw = hand.type_weight_vector(WEIGHTS)
    assert_scores(hand.graph_boost(np.array([0, 1, 1]), tw, pagerank_blend=0.0), PROX)


def test_graph_boost_blends_pagerank(hand: GraphIndex) -> None:
    pr = np.array([0.1, 0.2, 0.4, 0.0, 0.1, 0.0, 0.1, 0.1])
    hand._cache["pagerank"] = pr  # a known vector instead of the (zero, < 20 edges) real one
    norm = pr / 0.4
    expected = {k: 0.7 * v + 0.3 * norm[k] for k, v in PROX.items()}
    # 1: 0.7 * 1.3 + 0.3 * 0.5 = 1.06 is the max, 0: 0.637 + 0.075 = 0.712
    assert expected[1] == pytest.approx(1.06) and expected[0] == pytest.approx(0.712)
    cands, scores = hand.graph_boost([0, 1], hand.type_weight_vector(WEIGHTS))
    assert cands.tolist() == [1, 0, 2, 3, 4, 5]
    assert scores[:2] == pytest.approx([1.0, 0.712 / 1.06])
    assert_scores((cands, scores), expected)


def test_graph_boost_with_real_pagerank_matches_formula() -> None:
    edges = HAND + [(i, (i * 3 + 1) % 8, "relates_to") for i in range(8)] * 2
    g = GraphIndex.build(arrays(8, edges))
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(8))
    G.add_edges_from((s, d) for s, d, _ in edges)
    pr = nx.pagerank(G)
    top = max(pr.values())
    tw = g.type_weight_vector(WEIGHTS)
    # seed 0: out 0->1 (1.0 + 0.3 + 2 x relates_to 0.5), 0->2 (0.5); in 3->0 (0.7), 5->0 (2 x 0.35)
    prox = {1: 2.3, 2: 0.5, 3: 0.7, 5: 0.7}
    expected = {k: 0.7 * v + 0.3 * pr[k] / top for k, v in prox.items()}
    assert_scores(g.graph_boost([0], tw), expected)


def test_graph_boost_two_hop(hand: GraphIndex) -> None:
    tw = hand.type_weight_vector(WEIGHTS)
    # Top 2 one-hop nodes: 1 (1.3) and 0 (0.91); +0.15 per edge to the other end, both directions.
    # 1's edges: 1->4, 0->1 twice, 5->1; 0's edges: 0->1 twice, 0->2, 3->0.
    expected = dict(PROX)
    for v in (4, 0, 0, 5, 1, 1, 2, 3):
        expected[v] += 0.15
    assert_scores(hand.graph_boost([0, 1], tw, two_hop=True, two_hop_top=2, pagerank_blend=0.0), expected)
    # Top 4: 2 and 4 tie at 0.5 after 3 (0.7): the lower id (2) wins. 3->0 and 0->2, 2->6 add more.
    for v in (0, 0, 6):
        expected[v] = expected.get(v, 0.0) + 0.15
    assert_scores(hand.graph_boost([0, 1], tw, two_hop=True, two_hop_top=4, pagerank_blend=0.0), expected)


def test_graph_boost_edge_cases(hand: GraphIndex) -> None:
    tw = hand.type_weight_vector(WEIGHTS)
    cands, scores = hand.graph_boost(np.array([], np.int64), tw, two_hop=True)
    assert cands.size == scores.size == 0
    assert as_dict(hand.graph_boost([7, 7], tw)) == {6: 1.0}  # only in-edge 6 -> 7
    # 2-hop from 6: its edges 2 -> 6 and 6 -> 7 add 0.15 to 2 and to the seed 7 itself
    assert_scores(hand.graph_boost([7], tw, two_hop=True, pagerank_blend=0.0), {6: 0.35, 2: 0.15, 7: 0.15})
    assert hand.graph_boost([0], np.zeros(4))[0].size == 0  # zero weights boost nothing


def test_intent_edge_scores(hand: GraphIndex) -> None:
    # forward +1: 0 -implements-> 1, 1 -zzz-> 4; backward +0.7: 3 -implements-> 0, 0 -implements-> 1
    result = hand.intent_edge_scores([0, 1], ["implements", "zzz", "no_such_type"])
    assert result[0].tolist() == [1, 4, 0, 3]
    assert result[1] == pytest.approx([1.0, 1.0, 0.7, 0.7])
    assert hand.intent_edge_scores([0, 1], ["no_such_type"])[0].size == 0


def test_edge_type_boost(hand: GraphIndex) -> None:
    # +0.5 per out-edge, +0.3 per in-edge: 1 = 0.5 + 0.5, 0 = 0.3 + 0.3, 2 = 4 = 0.5, 3 = 5 = 0.3
    assert_scores(hand.edge_type_boost([0, 1]), {1: 1.0, 0: 0.6, 2: 0.5, 4: 0.5, 3: 0.3, 5: 0.3})
    assert_scores(hand.edge_type_boost([0, 1], ["has_limitation"]), {1: 0.5, 0: 0.3, 5: 0.3})
    assert hand.edge_type_boost([0, 1], ["has_limitation"])[0].tolist() == [1, 0, 5]


def test_edges_between_and_neighbors(hand: GraphIndex) -> None:
    tw = hand.type_weight_vector(WEIGHTS)
    assert hand.edges_between(1, [0, 5], tw) == [(0, 1, "implements"), (0, 1, "has_limitation"),
                                                  (5, 1, "has_limitation")]
    nb = hand.neighbors_of([0], "incoming")
    assert (nb.node.tolist(), nb.src_side.tolist(), nb.edge.tolist()) == ([3], [False], [3])
    nb = hand.neighbors_of([0, 1], "outgoing", ["implements"])
    assert (nb.node.tolist(), nb.origin.tolist()) == ([1], [0])
    assert hand.edge_type_diversity([0, 1, 7]).tolist() == [3, 3, 1]


def test_bfs_and_paths_on_hand_graph(hand: GraphIndex) -> None:
    levels = hand.bfs_levels(3, "outgoing", 5)
    assert [lv.tolist() for lv in levels] == [[3], [0], [1, 2], [4, 6], [7]]
    assert [lv.tolist() for lv in hand.bfs_levels(0, "outgoing", 5, ["implements"])] == [[0], [1]]
    tree = hand.bfs_parents(3, "outgoing", 5)
    assert tree.path_to(7) == [(3, None, None), (0, 1, True), (2, 2, True), (6, 1, True), (7, 2, True)]
    assert tree.path_to(5) is None
    path = hand.shortest_path(5, 6)
    assert path == [(5, None, None), (1, "has_limitation", "forward"), (0, "implements", "backward"),
                    (2, "relates_to", "forward"), (6, "implements", "forward")]
    assert hand.shortest_path(5, 6, max_depth=3) is None
    assert hand.shortest_path(6, 5, direction="outgoing") is None
    assert hand.shortest_path(6, 3, direction="incoming") == [
        (6, None, None), (2, "implements", "backward"), (0, "relates_to", "backward"),
        (3, "implements", "backward")]
    assert hand.shortest_path(4, 4) == [(4, None, None)]


# -- against networkx on random graphs ---------------------------------------------------------------
def random_case(seed: int) -> tuple[GraphArrays, nx.MultiDiGraph]:
    """Random directed multigraph: parallel edges of other types, self loops, isolated and dangling nodes."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    m = int(rng.integers(0, 4 * n))
    used = max(1, n - int(rng.integers(0, 4)))  # the last few nodes stay isolated
    src = rng.integers(0, used, m)
    dst = rng.integers(0, used, m) if seed % 3 else (src + rng.integers(1, 4, m)) % used  # sparse chains
    dup = rng.random(m) < 0.15  # parallel edges with another type
    src, dst = np.r_[src, src[dup]], np.r_[dst, dst[dup]]
    if seed % 4 == 0 and src.size:
        src[0] = dst[0]  # at least one self loop
    types = rng.integers(0, 3, src.size)
    names = ("a", "b", "c")
    a = arrays(n, [(int(s), int(d), names[t]) for s, d, t in zip(src, dst, types)], names,
               rng.random(src.size).tolist())
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from((int(s), int(d), {"type": names[t]}) for s, d, t in zip(src, dst, types))
    return a, G


CASES = list(range(30))


@pytest.mark.parametrize("seed", CASES)
def test_pagerank_matches_networkx(seed: int) -> None:
    a, G = random_case(seed)
    pr = GraphIndex.build(a).pagerank()
    if G.number_of_edges() < 20:
        assert not pr.any()
        return
    expected = nx.pagerank(G, alpha=0.85, max_iter=100)
    np.testing.assert_allclose(pr, [expected[i] for i in range(len(G))], atol=1e-6)


def test_pagerank_fallback_equals_the_spec_retry() -> None:
    a, G = random_case(7)
    g = GraphIndex.build(a)
    expected = nx.pagerank(G, alpha=0.85, max_iter=200, tol=1e-4)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.pagerank(G, alpha=0.85, max_iter=3)
    np.testing.assert_allclose(g.pagerank(max_iter=3), [expected[i] for i in range(len(G))], atol=1e-12)
    # tol_per_node=False: the L1 change is compared with tol itself, not n * tol
    strict = nx.pagerank(G, alpha=0.85, tol=1e-10 / len(G))
    np.testing.assert_allclose(g.pagerank(tol=1e-10, tol_per_node=False), [strict[i] for i in range(len(G))],
                               atol=1e-12)


@pytest.mark.parametrize("seed", CASES)
def test_paths_and_levels_match_networkx(seed: int) -> None:
    a, G = random_case(seed)
    g = GraphIndex.build(a)
    U, D = nx.Graph(G.to_undirected()), nx.DiGraph(G)
    rng = np.random.default_rng(seed)
    for start in rng.integers(0, len(G), 3).tolist():
        for direction, view in (("both", U), ("outgoing", D), ("incoming", D.reverse())):
            dist = nx.single_source_shortest_path_length(view, start, cutoff=4)
            levels = g.bfs_levels(start, direction, 4)
            assert {v: d for d, lv in enumerate(levels) for v in lv.tolist()} == dist
            tree = g.bfs_parents(start, direction, 4)
            for v, d in dist.items():
                check_path(G, [(x, g.types[t] if t is not None else None, f) for x, t, f in tree.path_to(v)],
                           d, start, v)
        for end in range(len(G)):
            path = g.shortest_path(start, end, max_depth=6)
            length = nx.shortest_path_length(U, start, end) if nx.has_path(U, start, end) else 99
            if length > 6:
                assert path is None
            else:
                check_path(G, [(x, t, None if f is None else f == "forward") for x, t, f in path],
                           length, start, end)
            directed = g.shortest_path(start, end, max_depth=6, direction="outgoing")
            d_len = nx.shortest_path_length(D, start, end) if nx.has_path(D, start, end) else 99
            assert (directed is None) == (d_len > 6)
            if directed:
                assert len(directed) - 1 == d_len and all(f in (None, "forward") for _, _, f in directed)


def check_path(G: nx.MultiDiGraph, path: list[tuple[int, str | None, bool | None]], length: int,
               start: int, end: int) -> None:
    """A path of the right length whose every step is a real edge of that type, in that direction."""
    assert len(path) == length + 1 and path[0] == (start, None, None) and path[-1][0] == end
    for (u, _, _), (v, etype, forward) in itertools.pairwise(path):
        s, t = (u, v) if forward else (v, u)
        assert any(d["type"] == etype for d in G.get_edge_data(s, t, default={}).values()), (s, t, etype)


@pytest.mark.parametrize("seed", CASES)
def test_jaccard_and_degree_centrality_match_networkx(seed: int) -> None:
    a, G = random_case(seed)
    g = GraphIndex.build(a)
    U = nx.Graph(G.to_undirected())
    for u in range(0, len(G), 3):
        expected = {v: p for _, v, p in nx.jaccard_coefficient(U, [(u, v) for v in range(len(G))])}
        np.testing.assert_allclose(g.jaccard_all(u), [expected[v] for v in range(len(G))], atol=1e-12)
        rows, values = g.jaccard_of(u)  # the sparse form: same values, zero off its rows
        dense = np.zeros(len(G))
        dense[rows] = values
        np.testing.assert_allclose(dense, g.jaccard_all(u), atol=1e-12)
    dc = nx.degree_centrality(nx.DiGraph(G))
    np.testing.assert_allclose(g.degree_centrality(), [dc[i] for i in range(len(G))], atol=1e-12)


# -- communities -----------------------------------------------------------------------------------
def planted(seed: int = 1) -> tuple[GraphArrays, nx.Graph]:
    U = nx.planted_partition_graph(8, 25, 0.3, 0.01, seed=seed)
    rng = np.random.default_rng(seed)
    edges = [(u, v) if rng.random() < 0.5 else (v, u) for u, v in U.edges()]
    return arrays(len(U), [(s, d, "relates_to") for s, d in edges]), U


def test_communities_quality_and_determinism() -> None:
    a, U = planted()
    labels = GraphIndex.build(a).communities()
    assert labels.dtype == np.int32 and labels.shape == (len(U),) and labels[0] == 0
    np.testing.assert_array_equal(labels, GraphIndex.build(a).communities())
    ours = nx.community.modularity(U, [set(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels)])
    greedy = nx.community.modularity(U, nx.community.greedy_modularity_communities(U))
    assert ours >= 0.9 * greedy


def test_small_graphs_skip_communities_and_pagerank() -> None:
    g = GraphIndex.build(arrays(5, [(0, 1, "implements")] * 9))
    assert g.communities().tolist() == [0, 1, 2, 3, 4]
    assert not g.pagerank().any()
    a, _ = random_case(11)
    assert GraphIndex.build(a).communities().min() == 0


# -- persistence and immutability ------------------------------------------------------------------
def test_save_load_round_trip(tmp_path: Path) -> None:
    a, _ = random_case(5)
    g = GraphIndex.build(a)
    g.save(tmp_path / "plain")
    assert not (tmp_path / "plain" / "pagerank.npy").exists()
    g.precompute().save(tmp_path / "full")
    h = GraphIndex.load(tmp_path / "full")
    assert memory_mapped(h.out.indices) and (h.n, h.types) == (g.n, g.types)
    for name, arr in g.to_arrays().items():
        np.testing.assert_array_equal(h.to_arrays()[name], arr)
    np.testing.assert_array_equal(h.pagerank(), g.pagerank())
    np.testing.assert_array_equal(h.communities(), g.communities())
    tw = g.type_weight_vector({"a": 1.0})
    for x, y in zip(h.graph_boost([0, 1], tw, two_hop=True), g.graph_boost([0, 1], tw, two_hop=True)):
        np.testing.assert_array_equal(x, y)
    assert h.shortest_path(0, g.n - 1) == g.shortest_path(0, g.n - 1)
    plain = GraphIndex.load(tmp_path / "plain", mmap=False)
    np.testing.assert_array_equal(plain.pagerank(), g.pagerank())


def test_damaged_cache_is_refused(tmp_path: Path) -> None:
    a, _ = random_case(5)
    GraphIndex.build(a).save(tmp_path)
    np.save(tmp_path / "in_etype.npy", np.zeros(3, np.int32))
    with pytest.raises(IndexDamaged, match="do not fit together"):
        GraphIndex.load(tmp_path)


@pytest.mark.parametrize("meta", ["[]", "{}", "{not json", '{"format": "other/1"}'])
def test_a_folder_that_is_not_an_index_is_a_typed_error(tmp_path: Path, meta: str) -> None:
    (tmp_path / "meta.json").write_text(meta)
    with pytest.raises(IndexDamaged, match=str(tmp_path)):
        GraphIndex.load(tmp_path)
    with pytest.raises(IndexDamaged, match="cannot load"):
        GraphIndex.load(tmp_path / "missing")


def test_bad_arguments_are_typed_errors() -> None:
    g = GraphIndex.build(arrays(3, [(0, 1, "implements")]))
    with pytest.raises(InvalidArgument, match="direction must be one of .* not 'up'"):
        g.neighbors_of(0, direction="up")
    with pytest.raises(InvalidArgument, match=r"edge endpoints must be node rows in \[0, 2\)"):
        GraphIndex.build(arrays(2, [(0, 2, "a")], ("a",)))


def memory_mapped(a: np.ndarray) -> bool:
    while a is not None and not isinstance(a, mmap.mmap):
        a = a.base
    return a is not None


def test_index_is_read_only() -> None:
    a, _ = random_case(5)
    g = GraphIndex.build(a)
    with pytest.raises(ValueError):
        g.out.etype[0] = 1
    with pytest.raises(ValueError):
        g.pagerank()[0] = 1.0
    assert (g.out_adj @ np.ones(g.n)).sum() == pytest.approx(a.weight.sum(), rel=1e-6)
    with pytest.raises(ValueError):
        GraphIndex.build(arrays(2, [(0, 2, "a")], ("a",)))
