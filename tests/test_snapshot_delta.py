"""Snapshot deltas (issue 31 goal 3): after writes, the snapshot updated from the change feed equals a
full build of the same version (BM25 scores to 1e-9, name index, vectors, graph arrays, search), on
SQLite and on PostgreSQL; a feed that cannot tell (pruned, too much changed) falls back to a build."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from conftest import write_nodelink
from postgres_cluster import running_cluster

import kgos
from kgos.index import delta
from kgos.index import snapshot as snapshots
from kgos.retrieval import hybrid
from kgos.retrieval.hybrid import SearchOptions
from kgos.store import changes

WORDS = ["otter", "heron", "lynx", "river", "marsh", "forest", "stone", "amber", "cedar", "delta"]
NODES = [{"id": f"n{i}", "name": f"Node {i} {WORDS[i % 10]}", "type": f"t{i % 3}",
          "description": f"word{i} {WORDS[(i * 3) % 10]} {WORDS[(i * 7) % 10]}",
          **({"properties": {"aliases": [f"alias{i}", "common alias"]}} if i % 4 == 0 else {})}
         for i in range(40)]
EDGES = [{"source": f"n{i}", "target": f"n{(i * 5 + 1) % 40}", "type": ["links", "near"][i % 2]} for i in range(40)]
QUERIES = ("otter river", "word5", "heron marsh", "alias8", "common alias", "fresh beaver", "Node 3 lynx", "amber")


def build_full(kg: kgos.KG) -> snapshots.Snapshot:
    """No cache, no previous: everything from the store."""
    return snapshots.build(kg.store, kg.engine.text, kg.engine._vector_model())


def assert_same(patched: snapshots.Snapshot, full: snapshots.Snapshot) -> None:
    assert patched.version == full.version
    assert patched.node_ids == full.node_ids and patched.names == full.names
    assert np.array_equal(patched.rowids, full.rowids) and np.array_equal(patched.edge_rowids, full.edge_rowids)
    assert (patched.vectors is None) == (full.vectors is None)
    if full.vectors is not None:
        assert np.array_equal(patched.vectors, full.vectors)
    assert patched.text.vocab == full.text.vocab and (patched.text.tf != full.text.tf).nnz == 0
    a, b = patched.text.matrix.tocsc(), full.text.matrix.tocsc()
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.allclose(a.data, b.data, rtol=0, atol=1e-9)
    for q in QUERIES:  # BM25 (N, lengths, document frequencies) and the name signal, node by node
        mine, theirs = patched.text.scores(patched.text.query_terms(q)), full.text.scores(full.text.query_terms(q))
        assert np.allclose(mine, theirs, rtol=0, atol=1e-9), q
        assert np.array_equal(patched.name_index.scores(q), full.name_index.scores(q)), q
    for part in ("exact", "sets"):
        mine, theirs = getattr(patched.name_index, part), getattr(full.name_index, part)
        assert mine.keys == theirs.keys
        for name, array in theirs.arrays().items():
            assert np.array_equal(mine.arrays()[name], array), (part, name)
    assert patched.graph.types == full.graph.types
    for name, array in full.graph.to_arrays().items():
        if name != "communities":  # carried from the previous partition: a valid labelling, maybe another
            assert np.allclose(patched.graph.to_arrays()[name], array, rtol=0, atol=1e-9), name
    assert np.array_equal(patched.graph.degree_centrality(), full.graph.degree_centrality())


def assert_same_search(patched: snapshots.Snapshot, full: snapshots.Snapshot, kg: kgos.KG) -> None:
    """Hybrid search (text, names, vectors, graph; no community bonus) ranks and scores alike."""
    options = SearchOptions(diversity=False)
    for q in QUERIES:
        got = [hybrid.search(s, kg.store, q, k=8, options=options, embed_query=kg.engine.embed_query)
               for s in (patched, full)]
        assert [(h.node.id, round(h.score, 9)) for h in got[0].results] == \
            [(h.node.id, round(h.score, 9)) for h in got[1].results], q


def random_writes(kg: kgos.KG, rng: random.Random, count: int, serial: list[int]) -> None:
    """Adds, updates and deletes of nodes and edges, each its own write (own version)."""
    for _ in range(count):
        ids = [n.id for n in kg.nodes()]
        op = rng.choice(["add", "add", "update", "rename", "delete", "edge", "edge", "unedge", "reweigh"])
        a, b = rng.choice(ids), rng.choice(ids)
        serial[0] += 1
        if op == "add":
            kg.upsert_node(f"x{serial[0]}", f"fresh {rng.choice(WORDS)} beaver{serial[0]}", type="t9",
                           description=f"{rng.choice(WORDS)} newword{serial[0]}",
                           properties={"aliases": [f"xalias{serial[0]}"]})
        elif op == "update":
            kg.update_node(a, description=f"{rng.choice(WORDS)} {rng.choice(WORDS)} changed{serial[0]}")
        elif op == "rename":
            kg.update_node(a, name=f"Renamed {rng.choice(WORDS)} {serial[0]}")
        elif op == "delete" and len(ids) > 20:
            kg.delete_node(a)
        elif op in ("edge", "reweigh") and a != b:
            kg.add_edge(a, b, rng.choice(["links", "near", f"new_type_{serial[0] % 3}"]), weight=rng.choice([0.5, 1.0, 2.0]))
        elif op == "unedge":
            edges = list(kg.edges())
            if edges:
                e = rng.choice(edges)
                kg.delete_edge(e.source, e.target, e.type)


def check_random_sequence(kg: kgos.KG, seed: int, rounds: int = 6, per_round: int = 4) -> None:
    rng, serial = random.Random(seed), [0]
    previous = build_full(kg)
    config, model = kg.engine.text, kg.engine._vector_model()
    for _ in range(rounds):
        random_writes(kg, rng, per_round, serial)
        patched = delta.updated(kg.store, previous, config, model)
        assert patched is not None, "the feed named what changed: no full build"
        full = build_full(kg)
        assert_same(patched, full)
        assert_same_search(patched, full, kg)
        previous = patched  # deltas chain: each starts from the last one


@pytest.fixture
def kg(ws: kgos.Workspace, tmp_path: Path) -> kgos.KG:
    ws.import_file("t", write_nodelink(tmp_path / "kg.json", NODES, EDGES))
    kg = ws.kg("t")
    kg.embed("hash")  # writes embed the nodes they change: the delta reads their vectors
    return kg


@pytest.mark.parametrize("seed", [1, 2])
def test_deltas_after_random_writes_equal_a_full_build_sqlite(kg: kgos.KG, seed: int) -> None:
    check_random_sequence(kg, seed)


def test_added_nodes_alone_take_the_append_paths_and_equal_a_full_build(kg: kgos.KG) -> None:
    """Nodes added with no other write: the name index appends its entries (new keys and existing
    ones), the graph index grows empty rows; still the arrays of a full build."""
    previous = build_full(kg)
    kg.add_node("Node 3 lynx", "t1", "same name as another")  # an existing name key, a new row
    kg.add_node("Quokka zebu", "t2", "brand new words", properties={"aliases": ["aardvark", "common alias"]})
    patched = delta.updated(kg.store, previous, kg.engine.text, kg.engine._vector_model())
    assert patched is not None and patched.graph is not previous.graph
    full = build_full(kg)
    assert_same(patched, full)
    assert_same_search(patched, full, kg)


def test_a_deleted_last_node_whose_rowid_the_next_insert_takes(kg: kgos.KG) -> None:
    """SQLite reuses the highest rowid after its row is deleted: the delta sees a new node in the
    old row (ids, index, texts, vectors), as a full build does."""
    kg.add_node("Last one", "t1", "to be deleted")
    previous = build_full(kg)
    last = previous.node_ids[-1]
    kg.delete_node(last)
    kg.add_node("Takes its rowid", "t2", "the next insert")
    patched = delta.updated(kg.store, previous, kg.engine.text, kg.engine._vector_model())
    assert patched is not None
    full = build_full(kg)
    assert_same(patched, full)
    assert last not in patched.index and patched.index == full.index


def test_a_write_by_another_connection_reaches_search_by_a_delta(kg: kgos.KG, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    kg.search("otter")
    other = kgos.Workspace(tmp_path / "home").kg("t")  # its own connection to the same file
    other.add_node("Zanzibar heron", "t1", "written elsewhere")
    built = []
    real = snapshots._build
    monkeypatch.setattr(snapshots, "_build", lambda *a, **k: built.append(1) or real(*a, **k))
    assert kg.search("zanzibar", k=1).results[0].node.name == "Zanzibar heron"
    assert built == []  # applied as a delta, no build


def test_a_pruned_feed_falls_back_to_a_full_build(kg: kgos.KG) -> None:
    previous = build_full(kg)
    for i in range(6):
        kg.add_node(f"pruned {i}", "t1")
    with kg.store.transaction(bump=False) as conn:
        changes.prune(conn, "", keep=2)  # the oldest tags go: the feed no longer reaches back to previous
        kept = conn.execute("SELECT count(*) FROM kg_changes").fetchone()[0]
    assert kept <= 2 + 2  # the newest tags whole (one write can record several rows)
    assert delta.updated(kg.store, previous, kg.engine.text, kg.engine._vector_model()) is None
    recent = build_full(kg)
    kg.add_node("after the prune", "t1")
    assert delta.updated(kg.store, recent, kg.engine.text, kg.engine._vector_model()) is not None
    assert [h.node.name for h in kg.search("after the prune", k=1).results] == ["after the prune"]


def test_a_large_change_falls_back_to_a_full_build(kg: kgos.KG, monkeypatch: pytest.MonkeyPatch) -> None:
    previous = build_full(kg)
    monkeypatch.setattr(delta, "MIN_LIMIT", 3)
    with kg.batch():
        for i in range(10):
            kg.add_node(f"bulk {i}", "t1")
    assert delta.updated(kg.store, previous, kg.engine.text, kg.engine._vector_model()) is None


def test_the_feed_stays_bounded_as_writers_prune_it(kg: kgos.KG, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "KEEP_ROWS", 5)
    monkeypatch.setattr(changes, "PRUNE_EVERY", 4)
    for i in range(20):
        kg.add_node(f"bounded {i}", "t1")
    with kg.store.transaction(bump=False) as conn:
        count = conn.execute("SELECT count(*) FROM kg_changes").fetchone()[0]
        floor = conn.execute("SELECT v FROM kg_changes_floor").fetchone()[0]
    assert count <= 5 + 4 * 3 and floor > 1  # the newest 5 rows' tags, and what 3 writes added since


# -- PostgreSQL --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pg():
    return running_cluster()


@pytest.fixture
def pg_kg(pg, tmp_path: Path):
    from kgos.store.postgres_db import close_all
    ws = kgos.Workspace(tmp_path / "pghome", database_url=pg.new_database())
    ws.import_file("t", write_nodelink(tmp_path / "kg.json", NODES, EDGES))
    kg = ws.kg("t")
    kg.embed("hash")
    yield kg
    ws.close()
    close_all()


def test_deltas_after_random_writes_equal_a_full_build_postgres(pg_kg: kgos.KG) -> None:
    check_random_sequence(pg_kg, 3, rounds=4)


def test_postgres_feed_gap_falls_back(pg_kg: kgos.KG) -> None:
    previous = build_full(pg_kg)
    pg_kg.add_node("gap one", "t1")
    pg_kg.add_node("gap two", "t1")
    with pg_kg.store.transaction(bump=False) as conn:
        changes.prune(conn, f"{pg_kg.store.s}.", keep=0)
    assert delta.updated(pg_kg.store, previous, pg_kg.engine.text, pg_kg.engine._vector_model()) is None
    assert [h.node.name for h in pg_kg.search("gap two", k=1).results] == ["gap two"]


def test_postgres_truncate_starts_the_feed_after_it(pg_kg: kgos.KG) -> None:
    previous = build_full(pg_kg)
    with pg_kg.store.transaction() as conn:
        conn.execute(f"TRUNCATE {pg_kg.store.s}.edges")
    assert delta.updated(pg_kg.store, previous, pg_kg.engine.text, pg_kg.engine._vector_model()) is None
    current = build_full(pg_kg)
    assert current.graph.n_edges == 0
    pg_kg.add_node("after truncate", "t1")
    assert delta.updated(pg_kg.store, current, pg_kg.engine.text, pg_kg.engine._vector_model()) is not None


def test_communities_are_carried_until_enough_edges_moved(kg: kgos.KG, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edge write keeps the previous partition (no Leiden run per write) until the edges written
    since the last detection pass REFINE_SHARE of all; then one Leiden pass refines it."""
    from kgos.index.graph import GraphIndex
    monkeypatch.setattr(delta, "REFINE_SHARE", 0.1)  # 40 edges: up to 4 edge rows on carried communities
    previous = build_full(kg)
    runs = []
    real = GraphIndex._communities
    monkeypatch.setattr(GraphIndex, "_communities", lambda self, *a: runs.append(1) or real(self, *a))
    kg.add_edge("n1", "n30", "links")
    kg.add_edge("n2", "n31", "links")
    patched = delta.updated(kg.store, previous, kg.engine.text, kg.engine._vector_model())
    assert patched is not None and runs == [] and patched.edges_since_communities == 2
    assert np.array_equal(patched.graph.communities(), previous.graph.communities())
    assert_same(patched, build_full(kg))
    runs.clear()
    for i in range(3):
        kg.add_edge(f"n{i + 3}", f"n{i + 20}", "near")
    again = delta.updated(kg.store, patched, kg.engine.text, kg.engine._vector_model())
    assert again is not None and runs == [1] and again.edges_since_communities == 0
