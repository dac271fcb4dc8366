"""The native store: CRUD, spec/002 upsert semantics, FTS kept in sync, versioning."""

from __future__ import annotations

import sqlite3

import pytest

from kgos.errors import InvalidArgument, NodeNotFound
from kgos.store.native import NativeStore


@pytest.fixture
def store(tmp_path):
    s = NativeStore.create(tmp_path / "t.db", "t", name="Test", description="a test KG")
    yield s
    s.close()


def fts(store: NativeStore, query: str) -> list[str]:
    sql = "SELECT n.id FROM nodes_fts f JOIN nodes n ON n.rowid = f.rowid WHERE nodes_fts MATCH ? ORDER BY n.id"
    return [r[0] for r in store.conn.execute(sql, (query,))]


def test_add_node_mints_readable_unique_ids(store):
    a = store.add_node("Prompt Caching!", "feature")
    b = store.add_node("prompt caching", "feature")
    assert (a.id, b.id) == ("feature:prompt_caching", "feature:prompt_caching_2")
    assert store.get_node(a.id).name == "Prompt Caching!"
    with pytest.raises(InvalidArgument, match="already exists"):
        store.add_node("x", id=a.id)


def test_node_fields_are_checked(store):
    for bad in ({"name": ""}, {"name": "x", "type": ""}, {"name": "x", "properties": [1]},
                {"name": "x", "description": 3}):
        with pytest.raises(InvalidArgument):
            store.add_node(**bad)
    assert store.node_count() == 0


def test_upsert_entity_is_unique_by_normalised_name_and_type(store):
    a = store.upsert_entity("Python", "tool", {"v": 1})
    b = store.upsert_entity("  python ", "tool", {"w": 2})
    c = store.upsert_entity("Python", "concept")
    assert a.id == b.id != c.id
    assert store.get_node(a.id).properties == {"v": 1, "w": 2}
    assert store.get_node(a.id).name == "Python"  # original casing kept


def test_edge_upsert_keeps_max_weight_merges_evidence_and_created_at(store):
    a, b = store.add_node("A"), store.add_node("B")
    first = store.add_edge(a.id, b.id, "uses", 0.9, {"evidence": {"memory_id": "m1"}})
    second = store.add_edge(a.id, b.id, "uses", 0.5, {"evidence": {"memory_id": "m2"}, "k": 1})
    assert store.edge_count() == 1
    assert second.weight == 0.9
    assert second.properties == {"evidence": [{"memory_id": "m1"}, {"memory_id": "m2"}], "k": 1}
    assert second.created_at == first.created_at
    assert store.add_edge(a.id, b.id, "uses", 1.0).weight == 1.0


def test_edge_to_unknown_node_or_bad_weight_changes_nothing(store):
    a = store.add_node("A")
    version = store.version()
    with pytest.raises(NodeNotFound):
        store.add_edge(a.id, "entity:missing", "uses")
    for weight in (float("nan"), float("inf"), "1", True):
        with pytest.raises(InvalidArgument):
            store.add_edge(a.id, a.id, "uses", weight)
    assert store.edge_count() == 0 and store.version() == version


def test_neighbors_by_direction_and_type(store):
    a, b, c = store.add_node("A"), store.add_node("B"), store.add_node("C")
    store.add_edge(a.id, b.id, "requires", 0.5)
    store.add_edge(c.id, a.id, "enables", 0.9)
    store.add_edge(a.id, c.id, "similar_to", 0.7)
    out = store.neighbors(a.id, "outgoing")
    assert [(n.node.id, n.edge.type) for n in out] == [(c.id, "similar_to"), (b.id, "requires")]
    assert [n.node.id for n in store.neighbors(a.id, "incoming")] == [c.id]
    assert all(n.direction == "incoming" for n in store.neighbors(a.id, "incoming"))
    assert [n.node.id for n in store.neighbors(a.id, "both", edge_types=["enables"])] == [c.id]
    assert len(store.neighbors(a.id, "both")) == 3
    with pytest.raises(InvalidArgument, match="direction"):
        store.neighbors(a.id, "sideways")


def test_fts_follows_inserts_updates_and_deletes(store):
    a = store.add_node("Prompt caching", "feature", "Reuse prompt prefixes", {"aliases": ["context cache"]})
    assert fts(store, "context") == [a.id]
    assert fts(store, "prefix") == [a.id]  # porter stemming: prefixes -> prefix
    store.update_node(a.id, properties={"aliases": ["kv reuse"]}, replace_properties=True)
    assert fts(store, "context") == [] and fts(store, "kv") == [a.id]
    store.delete_node(a.id)
    assert fts(store, "kv") == [] and fts(store, "prompt") == []


def test_delete_node_cascades_to_edges(store):
    a, b = store.add_node("A"), store.add_node("B")
    store.add_edge(a.id, b.id, "uses")
    assert store.delete_node(a.id) == 1
    assert store.edge_count() == 0 and store.neighbors(b.id) == []
    assert store.delete_edge(b.id, b.id, "uses") is False


def test_every_write_bumps_the_version_and_reads_do_not(store):
    def counter() -> int:
        return int(store.version().rsplit("#", 1)[1])
    v0 = counter()
    a = store.add_node("A")
    store.add_edge(a.id, a.id, "self")
    store.get_node(a.id), store.neighbors(a.id)
    assert counter() == v0 + 2


def test_unknown_node_suggests_close_ids(store):
    store.add_node("Prompt caching", "feature")
    with pytest.raises(NodeNotFound) as err:
        store.rowid("feature:prompt_cachng")
    assert err.value.suggestions == ["feature:prompt_caching"]
    assert "did you mean feature:prompt_caching" in str(err.value)


def test_graph_arrays_align_with_ids(store):
    a, b, c = store.add_node("A", "x"), store.add_node("B", "y"), store.add_node("C", "x")
    store.add_edge(a.id, b.id, "r", 0.5)
    store.add_edge(c.id, a.id, "q")
    g = store.graph_arrays()
    pairs = {(g.node_ids[s], g.node_ids[t], g.types[k], float(w))
             for s, t, k, w in zip(g.src, g.dst, g.type_code, g.weight)}
    assert pairs == {(a.id, b.id, "r", 0.5), (c.id, a.id, "q", 1.0)}
    assert [g.node_type_names[k] for k in g.node_types] == ["x", "y", "x"]



def test_graph_arrays_drop_edges_to_missing_nodes(store):
    """A hand-edited file (foreign keys off) may hold edges to rowids no node has: left out."""
    a, b, c = store.add_node("A"), store.add_node("B"), store.add_node("C")
    store.add_edge(a.id, b.id, "r")
    store.add_edge(b.id, c.id, "s")
    store.conn.execute("PRAGMA foreign_keys = OFF")
    store.conn.execute("INSERT INTO edges (source, target, type, weight, created_at) VALUES "
                       "(1, 99, 'x', 1, ''), (0, 2, 'y', 1, ''), (100, 101, 'z', 1, '')")
    g = store.graph_arrays()  # rowids 1..3 without gaps: looked up by offset
    assert {g.types[k] for k in g.type_code} == {"r", "s"} and g.n_edges == 2
    store.conn.execute("DELETE FROM nodes WHERE rowid = 1")  # a's edge now starts at a missing node
    g = store.graph_arrays()
    pairs = {(g.node_ids[s], g.node_ids[t], g.types[k]) for s, t, k in zip(g.src, g.dst, g.type_code)}
    assert pairs == {(b.id, c.id, "s")} and g.types == ("s",)

def test_migrations_are_recorded_and_idempotent(tmp_path, store):
    names = [r[0] for r in store.conn.execute("SELECT name FROM kg_migrations")]
    assert names == ["001_native_schema", "002_compact_vectors", "003_kg_predictions", "004_nodes_id_index",
                     "005_fts_text_changes"]
    again = NativeStore(store.path, "t")
    assert again.meta()["name"] == "Test"
    assert [r[0] for r in again.conn.execute("SELECT name FROM kg_migrations")] == names
    again.close()


def _file_at_003(path) -> None:
    """A KG file as KG-OS wrote it before migration 004: ids unique by the table's inline UNIQUE."""
    from kgos.store.migrations import MIGRATIONS, apply
    from kgos.store.native import connect
    conn = connect(path)
    apply(conn, MIGRATIONS[:3])
    conn.execute("INSERT INTO nodes (rowid, id, name, norm_name, description, properties, created_at, updated_at) "
                 "VALUES (5, 'a', 'Alpha', 'alpha', 'first letter', '{\"aliases\": [\"aleph\"]}', 't', 't'), "
                 "(9, 'b', 'Beta', 'beta', 'second letter', '{}', 't', 't'), (12, 'c', 'Gamma', 'gamma', '', '{}', 't', 't')")
    conn.execute("INSERT INTO edges (source, target, type, created_at) VALUES (5, 9, 'next', 't'), (9, 12, 'next', 't')")
    conn.execute("INSERT INTO node_embeddings (node, model, dims, content_hash, vector) VALUES (9, 'm', 1, 'h', x'0000803f')")
    conn.close()


def test_migration_004_keeps_every_row_and_moves_id_uniqueness_to_an_index(tmp_path):
    path = tmp_path / "old.db"
    _file_at_003(path)
    s = NativeStore(path, "old")
    sql = s.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'nodes'").fetchone()[0]
    assert "UNIQUE" not in sql
    assert s.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'nodes_id'").fetchone()
    # same rowids, so edges, vectors and the full-text index still meet their nodes
    assert [r[0] for r in s.conn.execute("SELECT rowid FROM nodes ORDER BY rowid")] == [5, 9, 12]
    assert {(e.source, e.target) for e in s.iter_edges()} == {("a", "b"), ("b", "c")}
    assert s.conn.execute("SELECT node FROM node_embeddings").fetchall() == [(9,)]
    assert fts(s, "aleph") == ["a"] and fts(s, "letter") == ["a", "b"]
    assert s.conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    # the rebuilt table is whole: unique ids, cascades, FTS triggers, upserts by id
    with pytest.raises(InvalidArgument, match="already exists"):
        s.add_node("x", id="a")
    with pytest.raises(sqlite3.IntegrityError):
        s.conn.execute("INSERT INTO nodes (id, name, norm_name, created_at, updated_at) VALUES ('a','A','a','t','t')")
    s.upsert_node("b", "Beta", description="renamed letter")
    assert fts(s, "renamed") == ["b"]
    assert s.delete_node("b") == 2 and s.edge_count() == 0
    assert s.conn.execute("SELECT count(*) FROM node_embeddings").fetchone() == (0,)
    s.add_node("Delta", id="d", description="fourth letter")
    assert fts(s, "fourth") == ["d"]
    s.close()


def test_a_failed_migration_leaves_the_file_and_the_foreign_key_setting_as_they_were(tmp_path, monkeypatch):
    from kgos.store import migrations
    path = tmp_path / "old.db"
    _file_at_003(path)
    broken = migrations.M004_NODES_ID_INDEX.replace("DROP TABLE nodes;", "DROP TABLE nodes;\nSELECT no_such_fn();")
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS[:3], ("004_nodes_id_index", broken)])
    from kgos.store.native import connect
    conn = connect(path)
    with pytest.raises(sqlite3.OperationalError, match="no_such_fn"):
        migrations.migrate(conn)
    assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    assert conn.execute("SELECT count(*) FROM edges").fetchone() == (2,)
    assert "UNIQUE" in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'nodes'").fetchone()[0]
    assert [r[0] for r in conn.execute("SELECT name FROM kg_migrations")][-1] == "003_kg_predictions"
    conn.close()


def test_two_processes_opening_an_old_file_at_once_migrate_it_once(tmp_path):
    """The second opener waits for the first one's write lock, then finds the migration recorded
    (it had read the list before) and skips it, instead of failing on the rebuilt file."""
    import threading

    from kgos.store import migrations
    from kgos.store.native import connect
    path = tmp_path / "old.db"
    _file_at_003(path)
    first, second = connect(path), connect(path)
    first.execute("PRAGMA foreign_keys = OFF")  # as migrate() does
    first.execute("BEGIN IMMEDIATE")
    outcome: list = []
    waiter = threading.Thread(target=lambda: outcome.append(_try(migrations.migrate, second)))
    waiter.start()
    waiter.join(0.5)  # the second opener has read the list of applied migrations and waits for the lock
    migrations.run_script(first, migrations.M004_NODES_ID_INDEX)
    first.execute("INSERT INTO kg_migrations VALUES ('004_nodes_id_index', 't')")
    first.execute("COMMIT")
    waiter.join(10)
    assert outcome == [[name for name, _ in migrations.MIGRATIONS[4:]]]  # 004 skipped, only the later ones
    assert second.execute("SELECT count(*) FROM edges").fetchone() == (2,)
    first.close()
    second.close()


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # the test reports what the thread raised
        return exc
