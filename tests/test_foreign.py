"""Foreign-schema KGs: detection of the seven named profiles and the heuristic, reads, the graph
arrays, validation reports, read-only refusal, writable round trips and hostile identifiers."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from kgos.errors import InvalidArgument, KGNotFound, NodeNotFound, ReadOnlyKG, SchemaNotRecognized
from kgos.store.foreign import ForeignStore, parse_properties
from kgos.store.profiles import NAMED, Profile, detect_profile, quote_ident

q = quote_ident
TS = "2026-01-01T00:00:00Z"

# One small graph, written into every layout. d has a non-ASCII name for the normalisation path.
NODES = [("a", "Alpha", "concept", "first letter", {"k": 1}), ("b", "Beta", "tool", "", {}),
         ("c", "Gamma", "concept", "", {}), ("d", "Éclair", "food", "a pastry", {})]
EDGES = [("a", "b", "uses", 0.9), ("a", "c", "relates_to", 0.5), ("b", "c", "uses", 0.7),
         ("c", "a", "part_of", 1.0)]
DANGLING = ("a", "zzz", "uses", 0.3)


@dataclass(frozen=True)
class Layout:
    """A foreign schema: node/edge table names and field -> column maps (only the fields it has)."""

    profile: str
    node_table: str
    node_cols: dict[str, str]
    edge_table: str
    edge_cols: dict[str, str]
    int_ids: bool = False  # node ids are INTEGER (exposed as "1", "2", ...)
    dangling: bool = True
    ddl: str = ""  # verbatim DDL instead of the generated one
    extra: tuple[str, ...] = field(default=())

    def key(self, letter: str) -> str:
        """The exposed id of node ``letter`` ("zzz", the dangling target, is 99 in integer layouts)."""
        if not self.int_ids:
            return letter
        return str("abcd".index(letter) + 1) if letter in "abcd" else "99"


MEMORY_DDL = """
CREATE TABLE entities (id TEXT PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL,
  normalized_name TEXT NOT NULL, metadata TEXT, created_ts TEXT NOT NULL, updated_ts TEXT NOT NULL,
  UNIQUE(normalized_name, type));
CREATE TABLE edges (id TEXT PRIMARY KEY, subject_id TEXT NOT NULL, predicate TEXT NOT NULL,
  object_id TEXT NOT NULL, weight REAL NOT NULL, evidence TEXT, created_ts TEXT NOT NULL,
  UNIQUE(subject_id, predicate, object_id),
  FOREIGN KEY(subject_id) REFERENCES entities(id), FOREIGN KEY(object_id) REFERENCES entities(id));
"""
WEIRD_NODES = 'my "nodes"; DROP TABLE x; --'
WEIRD_EDGES = 'e"dges\'); DELETE FROM x; --'

LAYOUTS = [
    Layout("unified", "unified_nodes", {"id": "node_id", "name": "name", "type": "node_type",
                                        "description": "description", "properties": "properties"},
           "unified_edges", {"source": "source_node_id", "target": "target_node_id", "type": "edge_type",
                             "weight": "weight", "properties": "properties"}),
    Layout("standard", "nodes", {"id": "id", "name": "name", "type": "type", "description": "description",
                                 "properties": "properties"},
           "edges", {"source": "source", "target": "target", "type": "type", "weight": "weight",
                     "properties": "properties", "created": "created_at"}),
    Layout("claude", "nodes", {"id": "node_id", "name": "name", "type": "type", "properties": "metadata"},
           "edges", {"source": "source_node_id", "target": "target_node_id", "type": "edge_type",
                     "weight": "confidence"}),
    Layout("hal", "nodes", {"id": "id", "name": "name", "type": "type"},
           "edges", {"id": "id", "source": "source_id", "target": "target_id", "type": "edge_type",
                     "weight": "weight"}, int_ids=True),
    Layout("from_node", "nodes", {"id": "id", "name": "name"},
           "edges", {"source": "from_node", "target": "to_node", "type": "type"}),
    Layout("entities", "entities", {"id": "id", "name": "name", "type": "entity_type",
                                    "description": "description", "properties": "properties"},
           "relations", {"source": "source_id", "target": "target_id", "type": "relation_type",
                         "weight": "weight", "properties": "properties"}),
    Layout("memory", "entities", {"id": "id", "type": "type", "name": "name", "norm": "normalized_name",
                                  "properties": "metadata", "created": "created_ts", "updated": "updated_ts"},
           "edges", {"id": "id", "source": "subject_id", "type": "predicate", "target": "object_id",
                     "weight": "weight", "properties": "evidence", "created": "created_ts"},
           dangling=False, ddl=MEMORY_DDL),
    # Heuristic 1: unusual names, integer node ids, endpoints stored as TEXT ('1') in the edge table.
    Layout("heuristic", "concepts", {"id": "uid", "name": "label", "type": "kind"},
           "links", {"source": "head", "target": "tail", "type": "relation", "weight": "strength"},
           int_ids=True),
    # Heuristic 2: hostile table names; a table x that must survive.
    Layout("heuristic", WEIRD_NODES,
           {"id": "key", "name": "title", "type": "category", "properties": "attrs"},
           WEIRD_EDGES, {"source": "src_id", "target": "dst_id", "type": "predicate", "weight": "score"},
           extra=("CREATE TABLE x (y TEXT)", "INSERT INTO x VALUES ('still here')")),
]
IDS = [f"{lay.profile}-{i}" for i, lay in enumerate(LAYOUTS)]


def _fast_connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous = OFF")  # throwaway fixture files: no fsync
    return conn


def _decl(field_name: str, lay: Layout) -> str:
    if field_name == "id":
        return "INTEGER PRIMARY KEY" if lay.int_ids else "TEXT PRIMARY KEY"
    # Endpoints stay TEXT even for integer node ids: that exercises joins across affinities.
    return "REAL" if field_name == "weight" else "TEXT"


def _create(conn: sqlite3.Connection, lay: Layout) -> None:
    if lay.ddl:
        conn.executescript(lay.ddl)
        return
    for table, cols in ((lay.node_table, lay.node_cols), (lay.edge_table, lay.edge_cols)):
        spec = ", ".join(f"{q(c)} {_decl(f, lay)}" for f, c in cols.items())
        conn.execute(f"CREATE TABLE {q(table)} ({spec})")


def _insert(conn: sqlite3.Connection, table: str, cols: dict[str, str], values: dict[str, object]) -> None:
    kept = {c: values[f] for f, c in cols.items() if f in values}
    conn.execute(f"INSERT INTO {q(table)} ({', '.join(map(q, kept))}) VALUES ({','.join('?' * len(kept))})",
                 list(kept.values()))


def _stored(lay: Layout, letter: str) -> object:
    return int(lay.key(letter)) if lay.int_ids else letter


def build(path: Path, lay: Layout) -> Path:
    """Write the small graph into ``path`` in layout ``lay``."""
    conn = _fast_connect(path)
    _create(conn, lay)
    for statement in lay.extra:
        conn.execute(statement)
    for letter, name, type_, desc, props in NODES:
        _insert(conn, lay.node_table, lay.node_cols, {
            "id": _stored(lay, letter), "name": name, "type": type_, "description": desc,
            "properties": json.dumps(props), "norm": name.lower(), "created": TS, "updated": TS})
    edges = EDGES + ([DANGLING] if lay.dangling else [])
    for i, (s, t, type_, w) in enumerate(edges):
        _insert(conn, lay.edge_table, lay.edge_cols, {
            "id": i + 1 if lay.int_ids else f"edge:{i}", "source": lay.key(s), "target": lay.key(t),
            "type": type_, "weight": w, "properties": json.dumps({"n": i}), "created": TS})
    conn.commit()
    conn.close()
    return path


@pytest.fixture(params=LAYOUTS, ids=IDS)
def lay(request: pytest.FixtureRequest) -> Layout:
    return request.param


@pytest.fixture
def kg_file(tmp_path: Path, lay: Layout) -> Path:
    return build(tmp_path / "kg file #1?.db", lay)  # URI-hostile characters in the path too


@pytest.fixture
def store(kg_file: Path) -> ForeignStore:
    with ForeignStore(kg_file, "foreign") as s:
        yield s


@pytest.fixture
def writable(kg_file: Path) -> ForeignStore:
    with ForeignStore(kg_file, "foreign", read_only=False) as s:
        s.conn.execute("PRAGMA synchronous = OFF")  # throwaway files: skip the fsyncs, keep tests fast
        yield s


def _type(lay: Layout, type_: str) -> str:
    return type_ if "type" in lay.node_cols else "entity"


def _weight(lay: Layout, w: float) -> float:
    return w if "weight" in lay.edge_cols else 1.0


# -- detection and reads --------------------------------------------------------------------------
def test_detects_profile_and_maps_columns(store: ForeignStore, lay: Layout) -> None:
    p = store.profile
    assert p.name == lay.profile
    assert (p.node_table, p.edge_table) == (lay.node_table, lay.edge_table)
    assert (p.node_id, p.node_name) == (lay.node_cols["id"], lay.node_cols["name"])
    assert (p.edge_source, p.edge_target, p.edge_type) == \
        tuple(lay.edge_cols[k] for k in ("source", "target", "type"))
    assert (p.node_type, p.edge_weight) == (lay.node_cols.get("type"), lay.edge_cols.get("weight"))
    assert p.node_properties == lay.node_cols.get("properties")
    assert p.edge_properties == lay.edge_cols.get("properties")
    assert store.meta()["profile"] == lay.profile and store.meta()["name"] == "foreign"


def test_counts_and_types(store: ForeignStore, lay: Layout) -> None:
    assert store.node_count() == 4
    assert store.edge_count() == 4  # the dangling edge is not part of the graph
    assert store.edge_types() == {"uses": 2, "relates_to": 1, "part_of": 1}
    expected = {"concept": 2, "tool": 1, "food": 1} if "type" in lay.node_cols else {"entity": 4}
    assert store.node_types() == expected


def test_get_and_find(store: ForeignStore, lay: Layout) -> None:
    a = store.get_node(lay.key("a"))
    assert a is not None and (a.id, a.name, a.type) == (lay.key("a"), "Alpha", _type(lay, "concept"))
    assert a.description == ("first letter" if "description" in lay.node_cols else "")
    assert a.properties == ({"k": 1} if "properties" in lay.node_cols else {})
    assert store.get_node("nope") is None
    assert set(store.get_nodes([lay.key("a"), lay.key("c"), "nope"])) == {lay.key("a"), lay.key("c")}
    assert [n.id for n in store.find_nodes("  ALPHA ")] == [lay.key("a")]
    assert [n.id for n in store.find_nodes("éclair")] == [lay.key("d")]
    assert store.find_nodes("alpha", type="tool") == []
    assert [n.name for n in store.search_names("ph")] == ["Alpha"]
    assert [n.name for n in store.search_names("A", limit=3)] == ["Beta", "Alpha", "Gamma"]  # shortest first
    assert len(list(store.iter_nodes())) == 4 and len(list(store.iter_edges())) == 4


def test_neighbors_directions_and_filters(store: ForeignStore, lay: Layout) -> None:
    a, b, c = lay.key("a"), lay.key("b"), lay.key("c")
    out = store.neighbors(a, "outgoing")
    assert [(n.node.id, n.edge.type, n.direction) for n in out] == \
        [(b, "uses", "outgoing"), (c, "relates_to", "outgoing")]
    assert out[0].edge.weight == pytest.approx(_weight(lay, 0.9)) and out[0].edge.source == a
    assert [(n.node.id, n.edge.type) for n in store.neighbors(a, "incoming")] == [(c, "part_of")]
    both = store.neighbors(a, "both", edge_types=["uses", "part_of"])
    assert sorted((n.node.id, n.direction) for n in both) == [(b, "outgoing"), (c, "incoming")]
    assert store.neighbors(a, "both", edge_types=[]) == []
    assert len(store.neighbors(a, "both", limit=1)) == 1
    with pytest.raises(NodeNotFound):
        store.neighbors("nope")
    edge = store.get_edge(b, c, "uses")
    assert edge is not None and edge.weight == pytest.approx(_weight(lay, 0.7))
    assert store.get_edge(b, c, "part_of") is None


def test_graph_arrays(store: ForeignStore, lay: Layout) -> None:
    ga = store.graph_arrays()
    assert (ga.n_nodes, ga.n_edges) == (4, 4)
    assert set(ga.node_ids) == {lay.key(x) for x in "abcd"}
    assert ga.src.dtype == np.int32 and ga.weight.dtype == np.float32
    triples = {(ga.node_ids[s], ga.types[t], ga.node_ids[d]) for s, t, d in zip(ga.src, ga.type_code, ga.dst)}
    assert triples == {(lay.key(s), t, lay.key(d)) for s, d, t, _ in EDGES}
    i = ga.index()[lay.key("a")]
    assert ga.node_type_names[ga.node_types[i]] == _type(lay, "concept")
    assert sorted(ga.weight.tolist()) == pytest.approx(sorted(_weight(lay, w) for *_, w in EDGES))


def test_dangling_edges_reported(store: ForeignStore, lay: Layout) -> None:
    count, sample = store.dangling_edges(limit=5)
    if not lay.dangling:
        assert (count, sample) == (0, [])
        return
    assert count == 1
    assert [(e.source, e.target, e.type) for e in sample] == [(lay.key("a"), lay.key(DANGLING[1]), "uses")]


def test_read_only_refuses_writes(store: ForeignStore, lay: Layout) -> None:
    for write in (lambda: store.add_node("X"), lambda: store.add_edge(lay.key("a"), lay.key("b"), "t"),
                  lambda: store.delete_node(lay.key("a")), lambda: store.update_node(lay.key("a"), name="Z"),
                  lambda: store.delete_edge(lay.key("a"), lay.key("b"), "uses")):
        with pytest.raises(ReadOnlyKG):
            write()
    assert store.node_count() == 4


# -- writes -----------------------------------------------------------------------------------------
def test_writable_node_round_trip(writable: ForeignStore, lay: Layout) -> None:
    before = writable.version()
    node = writable.add_node("New Thing", "concept", "fresh", {"evidence": ["m1"]})
    assert node.id == ("5" if lay.int_ids else "concept:new_thing")
    assert (node.name, node.type) == ("New Thing", _type(lay, "concept"))
    assert writable.version() != before
    with pytest.raises(InvalidArgument):
        writable.add_node("Other", id=node.id)
    has_props = "properties" in lay.node_cols
    updated = writable.update_node(node.id, name="Newer Thing", properties={"evidence": ["m2"], "x": 1})
    assert updated.name == "Newer Thing"
    assert updated.properties == ({"evidence": ["m1", "m2"], "x": 1} if has_props else {})
    assert [n.id for n in writable.find_nodes("newer thing")] == [node.id]
    same = writable.upsert_entity("  alpha", _type(lay, "concept"), {"seen": True})
    assert same.id == lay.key("a") and same.name == "Alpha"
    assert writable.upsert_node(node.id, "Newest", "concept").name == "Newest"
    assert writable.node_count() == 5
    writable.add_edge(node.id, lay.key("a"), "uses")
    assert writable.delete_node(node.id) == 1
    assert writable.get_node(node.id) is None and writable.node_count() == 4


def test_writable_edge_upsert_and_delete(writable: ForeignStore, lay: Layout) -> None:
    a, b = lay.key("a"), lay.key("b")
    writable.add_edge(b, a, "mentions", 0.4, {"evidence": "m1"})
    writable.add_edge(b, a, "mentions", 0.8, {"evidence": "m2"})
    edge = writable.add_edge(b, a, "mentions", 0.6)
    assert edge.weight == pytest.approx(_weight(lay, 0.8))  # upsert keeps the max
    if "properties" in lay.edge_cols:
        assert edge.properties == {"evidence": ["m1", "m2"]}
    assert writable.edge_count() == 5 and writable.graph_arrays().n_edges == 5
    with pytest.raises(NodeNotFound):
        writable.add_edge(a, "nope", "uses")
    with pytest.raises(InvalidArgument):
        writable.add_edge(a, b, "uses", float("nan"))
    assert writable.delete_edge(b, a, "mentions") is True
    assert writable.delete_edge(b, a, "mentions") is False
    assert writable.edge_count() == 4


def test_writes_persist_and_reopen_read_only(kg_file: Path, lay: Layout) -> None:
    with ForeignStore(kg_file, "rw", read_only=False) as s:
        s.add_node("Persisted", "concept", id=None)
    with ForeignStore(kg_file, "ro") as s:
        assert [n.name for n in s.find_nodes("persisted")] == ["Persisted"]
        assert s.profile.name == lay.profile


# -- hostile identifiers, explicit profiles ---------------------------------------------------------
def test_hostile_table_names_are_quoted(tmp_path: Path) -> None:
    path = build(tmp_path / "weird.db", LAYOUTS[-1])
    with ForeignStore(path, "weird", read_only=False) as s:
        assert s.profile.node_table == WEIRD_NODES and s.profile.edge_table == WEIRD_EDGES
        s.add_edge("a", s.add_node("Q'); DROP TABLE x; --").id, "rel\"; --", 0.5)
        assert s.neighbors("a", "outgoing", edge_types=['rel"; --'])[0].node.name == "Q'); DROP TABLE x; --"
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT y FROM x").fetchall() == [("still here",)]
    conn.close()


def test_explicit_profile_with_hostile_column_names(tmp_path: Path) -> None:
    cols = {"id": 'i"d', "name": "n'm; --", "type": "t]y[pe"}
    ecols = {"source": "fr om", "target": 'to"', "type": "k;ind"}
    lay = Layout("custom", "T; DROP TABLE x", cols, "E`dges", ecols, extra=("CREATE TABLE x (y TEXT)",))
    path = build(tmp_path / "cols.db", lay)
    profile = Profile("custom", "T; DROP TABLE x", 'i"d', "n'm; --", "E`dges", "fr om", 'to"', "k;ind",
                      node_type="t]y[pe")
    with ForeignStore(path, "cols", profile=profile, read_only=False) as s:
        assert s.node_count() == 4 and s.edge_count() == 4 and s.graph_arrays().n_edges == 4
        assert [n.node.id for n in s.neighbors("a", "outgoing", edge_types=["uses"])] == ["b"]
        s.update_node("a", description="ignored: no such column")
        assert s.delete_node("c") == 3
    with pytest.raises(SchemaNotRecognized, match="missing"):
        bad = Profile("bad", "T; DROP TABLE x", "id", "name", "E`dges", "a", "b", "c")
        ForeignStore(path, "cols", profile=bad)


def test_quote_ident() -> None:
    assert quote_ident('a"b') == '"a""b"'
    assert quote_ident("x; DROP TABLE y") == '"x; DROP TABLE y"'
    with pytest.raises(SchemaNotRecognized):
        quote_ident("a\x00b")


def test_profile_round_trips_through_dict() -> None:
    p = NAMED["memory"]
    assert Profile.from_dict({**p.to_dict(), "future_field": 1}) == p


# -- detection rules --------------------------------------------------------------------------------
def _script(path: Path, sql: str) -> Path:
    conn = _fast_connect(path)
    conn.executescript(sql)
    conn.close()
    return path


def test_heuristic_prefers_the_mapping_whose_edges_join(tmp_path: Path) -> None:
    path = _script(tmp_path / "two.db", """
        CREATE TABLE aaa_people (id TEXT, name TEXT); INSERT INTO aaa_people VALUES ('p1', 'Ann');
        CREATE TABLE things (id TEXT, name TEXT); INSERT INTO things VALUES ('t1', 'Rock'), ('t2', 'Tree');
        CREATE TABLE triples (subject TEXT, object TEXT, predicate TEXT);
        INSERT INTO triples VALUES ('t1', 't2', 'near');
    """)
    conn = sqlite3.connect(path)
    p = detect_profile(conn)
    conn.close()
    assert (p.name, p.node_table, p.edge_source, p.edge_target, p.edge_type) == \
        ("heuristic", "things", "subject", "object", "predicate")


def test_forced_profile_name(kg_file: Path, lay: Layout) -> None:
    if lay.profile in NAMED:
        with ForeignStore(kg_file, "x", profile=lay.profile) as s:
            assert s.profile.name == lay.profile
    with ForeignStore(kg_file, "x", profile="heuristic") as s:
        assert s.node_count() == 4
    with pytest.raises(SchemaNotRecognized, match="unknown profile"):
        ForeignStore(kg_file, "x", profile="nope")


def test_forced_profile_that_does_not_fit(tmp_path: Path) -> None:
    path = build(tmp_path / "std.db", LAYOUTS[1])
    with pytest.raises(SchemaNotRecognized, match="profile 'unified' needs"):
        ForeignStore(path, "x", profile="unified")


def test_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("this is not a database, just text " * 200)
    with pytest.raises(SchemaNotRecognized, match="not an SQLite database"):
        ForeignStore(path, "x")


def test_unrelated_tables(tmp_path: Path) -> None:
    shop = "CREATE TABLE orders (id, total); CREATE TABLE customers (id, email);"
    path = _script(tmp_path / "shop.db", shop)
    with pytest.raises(SchemaNotRecognized, match="customers, orders") as err:
        ForeignStore(path, "x")
    assert "KG-OS looks for" in str(err.value)
    with pytest.raises(SchemaNotRecognized, match="no tables"):
        ForeignStore(_script(tmp_path / "empty.db", ""), "x")


def test_native_file_is_refused(tmp_path: Path) -> None:
    path = _script(tmp_path / "native.db", """
        CREATE TABLE kg_meta (key, value); CREATE TABLE kg_migrations (name);
        CREATE TABLE nodes (id, name, norm_name, type); CREATE TABLE edges (source, target, type);""")
    with pytest.raises(SchemaNotRecognized, match="native"):
        ForeignStore(path, "x")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(KGNotFound):
        ForeignStore(tmp_path / "nope.db", "x")
    assert not (tmp_path / "nope.db").exists()


# -- validation -----------------------------------------------------------------------------------
def test_invalid_properties_read_and_reported(tmp_path: Path) -> None:
    path = build(tmp_path / "bad.db", LAYOUTS[1])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE nodes SET properties = 'not json {' WHERE id = 'b'")
    conn.execute("UPDATE nodes SET properties = '[1, 2]' WHERE id = 'c'")
    conn.execute("UPDATE nodes SET properties = NULL WHERE id = 'd'")
    conn.commit()
    conn.close()
    with ForeignStore(path, "bad") as s:
        assert s.get_node("b").properties == {"value": "not json {"}
        assert s.get_node("c").properties == {"value": [1, 2]}
        assert s.get_node("d").properties == {}
        assert s.invalid_properties() == (1, ["b"])


def test_parse_properties() -> None:
    assert parse_properties('{"a": 1}') == {"a": 1}
    assert parse_properties(b'{"a": 1}') == {"a": 1}
    assert parse_properties("") == {} and parse_properties(None) == {}
    assert parse_properties(7) == {"value": 7}


def test_version_tracks_outside_writes(tmp_path: Path) -> None:
    path = build(tmp_path / "v.db", LAYOUTS[1])
    with ForeignStore(path, "v") as s:
        before = s.version()
        assert s.version() == before
        conn = sqlite3.connect(path)
        conn.execute("UPDATE nodes SET name = 'Alpha!' WHERE id = 'a'")
        conn.commit()
        conn.close()
        assert s.version() != before
        assert s.get_node("a").name == "Alpha!"


def test_memory_profile_fills_optional_columns(tmp_path: Path) -> None:
    with ForeignStore(build(tmp_path / "m.db", LAYOUTS[6]), "memory") as s:
        p = s.profile
    assert (p.node_norm_name, p.node_created, p.node_updated) == \
        ("normalized_name", "created_ts", "updated_ts")
    assert (p.edge_id, p.edge_weight, p.edge_properties, p.edge_created) == \
        ("id", "weight", "evidence", "created_ts")


def test_null_cells_get_defaults(tmp_path: Path) -> None:
    path = _script(tmp_path / "nulls.db", """
        CREATE TABLE nodes (id, name, type); CREATE TABLE edges (source, target, type, weight);
        INSERT INTO nodes VALUES ('a', NULL, NULL), ('b', 'Bee', 'insect'), (NULL, 'no id', 'x');
        INSERT INTO edges VALUES ('a', 'b', NULL, NULL), ('b', 'a', 'eats', 'heavy');
    """)
    with ForeignStore(path, "nulls") as s:
        a = s.get_node("a")
        assert (a.name, a.type) == ("", "entity")  # an empty name is left for the validator to flag
        assert s.node_count() == 2  # a row without an id is no node
        edge = s.get_edge("a", "b", "relates_to")
        assert edge is not None and edge.weight == 1.0
        assert s.get_edge("b", "a", "eats").weight == 0.0  # SQLite's CAST('heavy' AS REAL), everywhere alike
        assert s.graph_arrays().types == ("eats", "relates_to")


def test_wal_mode_file_version_follows_writes(tmp_path: Path) -> None:
    path = build(tmp_path / "wal.db", LAYOUTS[1])
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    with ForeignStore(path, "wal", read_only=False) as s:
        before = s.version()
        s.add_node("Walrus")
        assert s.version() != before and s.node_count() == 5
    conn.close()


# -- common shapes and the vectors a file already has ---------------------------------------------------
def _concepts_file(path: Path, vectors: dict[str, list[tuple[str, list[float]]]] | None = None) -> Path:
    """concepts(concept_id, label) + links(head, tail, relation), optionally node_embeddings(node_id, model, vector)."""
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE concepts (concept_id TEXT PRIMARY KEY, label TEXT, definition TEXT)")
    c.execute("CREATE TABLE links (head TEXT, tail TEXT, relation TEXT)")
    c.executemany("INSERT INTO concepts VALUES (?,?,?)", [(f"c{i}", f"Concept {i}", f"about {i}") for i in range(4)])
    c.executemany("INSERT INTO links VALUES (?,?,?)", [("c0", "c1", "is_a"), ("c1", "c2", "part_of")])
    if vectors is not None:
        c.execute("CREATE TABLE node_embeddings (node_id TEXT, model TEXT, vector BLOB)")
        for model, rows in vectors.items():
            c.executemany("INSERT INTO node_embeddings VALUES (?,?,?)",
                          [(nid, model, np.asarray(v, "<f4").tobytes()) for nid, v in rows])
    c.commit()
    c.close()
    return path


def test_heuristic_reads_concepts_and_links_and_explains_itself(tmp_path: Path) -> None:
    with ForeignStore(_concepts_file(tmp_path / "c.db"), "c") as s:
        p = s.profile
        assert (p.name, p.node_table, p.node_id, p.node_name, p.edge_table, p.edge_source, p.edge_target,
                p.edge_type) == ("heuristic", "concepts", "concept_id", "label", "links", "head", "tail", "relation")
        assert s.node_count() == 4 and s.get_node("c1").name == "Concept 1"
        assert s.get_edge("c0", "c1", "is_a") is not None
        lines = s.detection()
    assert lines[0].startswith("profile: heuristic (no named profile fits")
    assert lines[1] == "nodes: concepts (id concept_id, the <table>_id column, name label; description definition)"
    assert lines[2] == "edges: links (head -> tail, type relation)" and len(lines) == 3  # no vector table


def test_primary_key_is_the_node_id_when_no_usual_name_fits(tmp_path: Path) -> None:
    c = sqlite3.connect(tmp_path / "k.db")
    c.execute("CREATE TABLE terms (code TEXT PRIMARY KEY, title TEXT)")
    c.execute("CREATE TABLE triples (subject TEXT, object TEXT, predicate TEXT)")
    c.execute("INSERT INTO terms VALUES ('a', 'A'), ('b', 'B')")
    c.execute("INSERT INTO triples VALUES ('a', 'b', 'sees')")
    c.commit()
    c.close()
    with ForeignStore(tmp_path / "k.db", "k") as s:
        assert (s.profile.node_id, s.profile.node_name) == ("code", "title") and s.edge_count() == 1
        assert "id code, the primary key" in s.detection()[1]


def test_stored_vectors_are_read_per_model(tmp_path: Path) -> None:
    rows = {"minilm": [("c0", [1.0, 0.0, 0.5]), ("c1", [0.0, 2.0, 0.25])], "other": [("c0", [9.0, 9.0, 9.0])]}
    with ForeignStore(_concepts_file(tmp_path / "v.db", rows), "v") as s:
        assert "vectors: node_embeddings (node_id -> vector, 3-d float32; minilm: 2, other: 1)" in s.detection()
        got = [(ids, v) for ids, v in s.stored_vectors("minilm")]
        assert got[0][0] == ["c0", "c1"] and got[0][1].dtype == np.float32
        assert np.array_equal(got[0][1], np.array([[1.0, 0.0, 0.5], [0.0, 2.0, 0.25]], np.float32))
        with pytest.raises(InvalidArgument, match="name the model.*minilm, other"):
            next(s.stored_vectors())
        with pytest.raises(InvalidArgument, match="no vectors of model 'bert'"):
            next(s.stored_vectors("bert"))


def test_a_vector_of_the_wrong_length_names_its_node(tmp_path: Path) -> None:
    path = _concepts_file(tmp_path / "w.db", {"m": [("c0", [1.0, 2.0]), ("c1", [1.0, 2.0, 3.0])]})
    with ForeignStore(path, "w") as s, pytest.raises(InvalidArgument, match="vector of node 'c1' in node_embeddings"):
        list(s.stored_vectors("m"))


def test_a_file_without_vector_tables_has_none_to_read(tmp_path: Path) -> None:
    with ForeignStore(_concepts_file(tmp_path / "n.db"), "n") as s:
        assert s.vector_tables() == []
        with pytest.raises(InvalidArgument, match="no vector table"):
            next(s.stored_vectors())


def test_kg_attach_prints_how_it_read_the_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kgos.cli import cli
    path = _concepts_file(tmp_path / "c.db", {"their-model": [("c0", [1.0, 0.0])]})
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "kg", "attach", "c", str(path)])
    assert r.exit_code == 0, r.output
    assert "nodes: concepts (id concept_id" in r.output and "vectors: node_embeddings" in r.output
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "kg", "attach", "c2", str(path), "--json"])
    assert json.loads(r.output)["detection"][2] == "edges: links (head -> tail, type relation)"


def test_attach_reads_the_files_vectors_and_search_uses_them(tmp_path: Path) -> None:
    """The file's vector of c2 is the hash embedding of an unrelated phrase: search by meaning finds c2
    by that phrase only if the file's vector was read instead of embedding c2's own text."""
    from click.testing import CliRunner

    import kgos
    from kgos.cli import cli
    from kgos.embed.registry import get_embedder
    phrase = "zebra quokka saxophone"
    emb = get_embedder("hash")
    rng = np.random.default_rng(0)
    rows = [(f"c{i}", (emb.embed([phrase])[0] * 3.0 if i == 2 else rng.normal(size=emb.dims)).tolist())
            for i in range(3)] + [("ghost", rng.normal(size=emb.dims).tolist())]
    path = _concepts_file(tmp_path / "c.db", {"hash": rows})
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "kg", "attach", "c", str(path)])
    assert r.exit_code == 0, r.output
    assert "vectors read as hash:512: 3 nodes (1 ids not in the KG skipped), 1 embedded" in r.output  # c3 had none
    ws = kgos.Workspace(tmp_path / "home")
    hits = ws.kg("c").search(phrase, k=2, mode="embedding").results
    assert hits[0].node.id == "c2" and hits[0].score > 0.99
    ws.close()


def test_vectors_of_another_size_than_the_named_model_are_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    import kgos
    from kgos.cli import cli
    path = _concepts_file(tmp_path / "c.db", {"mystery": [("c0", [1.0, 0.0, 0.0])]})
    home = ["--home", str(tmp_path / "home")]
    r = CliRunner().invoke(cli, [*home, "kg", "attach", "c", str(path)])
    assert r.exit_code == 0 and "vectors not read: KG-OS does not know the file's model" in r.output
    r = CliRunner().invoke(cli, [*home, "kg", "attach", "d", str(path), "--vectors-model", "hash"])
    assert r.exit_code != 0 and "3 dimensions and hash-512's 512" in r.output
    assert "d" not in [k.db_id for k in kgos.Workspace(tmp_path / "home").list()]  # not left half attached
