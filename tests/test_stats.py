"""KG statistics against networkx on random graphs, plus the edge cases (empty KG, dangling edges)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from kgos.store.native import NativeStore
from kgos.store.stats import DegreeSummary, kg_stats

TYPES = ("is_a", "part_of", "requires", "relates_to")


def native_kg(path: Path, n: int, triples: list[tuple[int, int, str]]) -> NativeStore:
    """A native file with nodes n0..n{n-1} and the given edges, written in one transaction."""
    store = NativeStore.create(path, "t")
    with store.transaction() as conn:
        conn.executemany("INSERT INTO nodes (rowid, id, name, norm_name, type, created_at, updated_at) "
                         "VALUES (?, ?, ?, ?, ?, 'x', 'x')",
                         [(i + 1, f"n{i}", f"N{i}", f"n{i}", ("tool", "goal")[i % 3 == 0]) for i in range(n)])
        conn.executemany("INSERT INTO edges (source, target, type, created_at) VALUES (?, ?, ?, 'x')",
                         [(s + 1, d + 1, t) for s, d, t in triples])
    return store


def random_graph(rng: random.Random) -> tuple[int, list[tuple[int, int, str]]]:
    n = rng.randint(1, 40)
    m = rng.randint(0, 3 * n)
    # The native file keeps (source, target, type) unique, so draw distinct triples.
    triples = {(rng.randrange(n), rng.randrange(n), rng.choice(TYPES)) for _ in range(m)}
    return n, sorted(triples)


def summary(values: list[int]) -> DegreeSummary:
    return DegreeSummary.of(np.asarray(values))


@pytest.mark.parametrize("seed", range(25))
def test_stats_agree_with_networkx(tmp_path: Path, seed: int) -> None:
    n, triples = random_graph(random.Random(seed))
    stats = kg_stats(native_kg(tmp_path / "t.db", n, triples))
    g = nx.MultiDiGraph()
    g.add_nodes_from(f"n{i}" for i in range(n))
    g.add_edges_from((f"n{s}", f"n{d}", {"type": t}) for s, d, t in triples)
    assert (stats.nodes, stats.edges) == (g.number_of_nodes(), g.number_of_edges())
    assert Counter(stats.edge_types) == Counter(t for _, _, t in triples)
    assert list(stats.edge_types.values()) == sorted(stats.edge_types.values(), reverse=True)
    assert sum(stats.node_types.values()) == n
    nodes = list(g.nodes)
    assert stats.in_degree == summary([g.in_degree(v) for v in nodes])
    assert stats.out_degree == summary([g.out_degree(v) for v in nodes])
    assert stats.total_degree == summary([g.degree(v) for v in nodes])
    assert stats.in_degree.max == max(d for _, d in g.in_degree())
    assert stats.components == nx.number_weakly_connected_components(g)
    assert stats.largest_component == max(len(c) for c in nx.weakly_connected_components(g))
    assert stats.self_loops == nx.number_of_selfloops(g)
    loopless = nx.DiGraph(g)
    loopless.remove_edges_from(nx.selfloop_edges(loopless))
    assert stats.orphans == len(list(nx.isolates(loopless)))
    assert stats.density == pytest.approx(nx.density(g))


def test_degree_summary_values() -> None:
    s = DegreeSummary.of(np.arange(101))
    assert (s.min, s.max, s.mean, s.median, s.p90, s.p99) == (0, 100, 50.0, 50.0, 90.0, 99.0)


def test_json_shape(tmp_path: Path) -> None:
    stats = kg_stats(native_kg(tmp_path / "t.db", 4, [(0, 1, "is_a"), (1, 2, "is_a"), (2, 2, "zzz")]))
    d = json.loads(json.dumps(stats.to_dict()))
    assert (d["nodes"], d["edges"], d["orphans"], d["self_loops"]) == (4, 3, 1, 1)
    assert d["edge_types"] == {"is_a": 2, "zzz": 1}
    assert d["node_types"] == {"tool": 2, "goal": 2}
    assert set(d["in_degree"]) == {"min", "max", "mean", "median", "p90", "p99"}
    assert (d["components"], d["largest_component"]) == (2, 3)


def test_empty_kg(tmp_path: Path) -> None:
    stats = kg_stats(NativeStore.create(tmp_path / "e.db", "e"))
    assert (stats.nodes, stats.edges, stats.components, stats.largest_component) == (0, 0, 0, 0)
    assert stats.density == 0.0 and stats.total_degree == DegreeSummary(0, 0, 0.0, 0.0, 0.0, 0.0)


def test_dangling_edges_are_counted_but_not_traversed(tmp_path: Path) -> None:
    store = native_kg(tmp_path / "t.db", 3, [(0, 1, "is_a")])
    store.conn.execute("PRAGMA foreign_keys = OFF")
    store.conn.execute("INSERT INTO edges (source, target, type, created_at) VALUES (3, 99, 'is_a', 'x')")
    stats = kg_stats(store)
    assert stats.edges == 2 and stats.edge_types == {"is_a": 1}
    assert (stats.orphans, stats.components, stats.total_degree.max) == (1, 2, 1)
