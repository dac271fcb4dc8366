"""The store contract, on every backend: a native SQLite file, a foreign SQLite schema attached
writable, and PostgreSQL (a throwaway cluster, one per test session; skipped with the reason when no
server can be started). Each test builds the same small KG through the facade and checks reads,
writes, versions, hostile text, search, the query methods, validation, stats and import/export."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from postgres_cluster import running_cluster, running_vector_cluster

import kgos
from kgos.errors import InvalidArgument, NodeNotFound

# "pushdown": a PostgreSQL KG whose search, impact and trace run in the database (pgvector + full
# text + recursive CTEs, retrieval.pushdown); on a server with pgvector (skipped with the reason without)
BACKENDS = ("native", "foreign", "postgres", "pushdown")
HOSTILE = "x'); DROP TABLE nodes; --"
FOREIGN_DDL = """
CREATE TABLE nodes (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT, description TEXT, properties TEXT);
CREATE TABLE edges (id INTEGER PRIMARY KEY, source TEXT NOT NULL, target TEXT NOT NULL, type TEXT NOT NULL,
                    weight REAL, properties TEXT, UNIQUE (source, target, type));
"""


_SHARED: dict[str, str] = {}


def postgres_url(backend: str = "postgres") -> str:
    """One database per PostgreSQL backend for the session's contract tests; each test leaves it
    empty (see backend_ws)."""
    c = running_vector_cluster() if backend == "pushdown" else running_cluster()
    if backend not in _SHARED:
        _SHARED[backend] = c.new_database()
    return _SHARED[backend]


@pytest.fixture(params=BACKENDS)
def backend_ws(request: pytest.FixtureRequest, tmp_path: Path):
    """(backend, workspace, db_id of an empty writable KG on that backend)."""
    url = postgres_url(request.param) if request.param in ("postgres", "pushdown") else None
    ws = kgos.Workspace(tmp_path / "home", database_url=url)
    if request.param == "foreign":
        path = tmp_path / "foreign.db"
        with sqlite3.connect(path) as conn:
            conn.executescript(FOREIGN_DDL)
        ws.attach("k", path, writable=True)
    else:
        ws.create("k")
    if request.param == "pushdown":
        ws.kg("k").store.set_meta(pushdown="on")  # the KG's own setting (else KGOS_PUSHDOWN, else by size)
    yield request.param, ws, "k"
    if url is not None:
        for db_id in ws.pg.kg_ids():
            ws.pg.drop_kg(db_id)
    ws.close()


@pytest.fixture
def kg(backend_ws):
    _, ws, db_id = backend_ws
    g = ws.kg(db_id)
    g.add_node("Prompt caching", "feature", "Reuse a cached prompt prefix to cut cost.",
               {"aliases": ["context caching"], "cost": 0.2, "latency": 0.9}, id="feature:prompt_caching")
    g.add_node("Token savings", "benefit", "Fewer input tokens billed.", id="benefit:token_savings")
    g.add_node("Cost reduction", "goal", "Spend less on API calls.", id="goal:cost_reduction")
    g.add_node("Cache size limit", "limitation", "The cache holds at most 4 prefixes.", id="limitation:cache_size")
    g.add_node("Batching", "feature", "Send many requests at once for half the cost.", {"cost": 0.5},
               id="feature:batching")
    g.add_edge("feature:prompt_caching", "benefit:token_savings", "enables", 0.9)
    g.add_edge("benefit:token_savings", "goal:cost_reduction", "achieves", 0.8)
    g.add_edge("feature:prompt_caching", "limitation:cache_size", "has_limitation", 0.7)
    g.add_edge("feature:batching", "goal:cost_reduction", "achieves", 0.6)
    g.add_edge("feature:batching", "feature:prompt_caching", "alternative_to", 0.5)
    return g


# -- reads -----------------------------------------------------------------------------------------
def test_counts_lookups_and_listing(kg):
    s = kg.store
    assert (s.node_count(), s.edge_count()) == (5, 5)
    node = kg.node("feature:prompt_caching")
    assert (node.name, node.type, node.properties["aliases"]) == ("Prompt caching", "feature", ["context caching"])
    assert set(s.get_nodes(["feature:batching", "goal:cost_reduction", "nope"])) == {"feature:batching",
                                                                                   "goal:cost_reduction"}
    assert [n.id for n in kg.find_nodes("PROMPT Caching")] == ["feature:prompt_caching"]
    assert [n.id for n in s.search_names("CACH")] == ["feature:prompt_caching", "limitation:cache_size"]
    assert [n.id for n in kg.nodes()] == ["feature:prompt_caching", "benefit:token_savings", "goal:cost_reduction",
                                          "limitation:cache_size", "feature:batching"]  # storage order
    assert s.node_types() == {"feature": 2, "benefit": 1, "goal": 1, "limitation": 1}
    assert s.edge_types()["achieves"] == 2


def test_neighbors_edges_and_arrays(kg):
    out = kg.neighbors("feature:prompt_caching", "outgoing")
    assert [n.node.id for n in out] == ["benefit:token_savings", "limitation:cache_size"]  # strongest first
    incoming = kg.neighbors("feature:prompt_caching", "incoming")
    assert [(n.node.id, n.edge.type) for n in incoming] == [("feature:batching", "alternative_to")]
    only = kg.neighbors("feature:prompt_caching", edge_types=["has_limitation"])
    assert [n.node.id for n in only] == ["limitation:cache_size"]
    assert len(kg.neighbors("feature:prompt_caching", limit=1)) == 1
    edge = kg.store.get_edge("feature:batching", "goal:cost_reduction", "achieves")
    assert edge is not None and edge.weight == pytest.approx(0.6)
    arrays = kg.store.graph_arrays()
    assert len(arrays.node_ids) == 5 and arrays.src.size == 5
    pairs = {(arrays.node_ids[a], arrays.node_ids[b]) for a, b in zip(arrays.src, arrays.dst)}
    assert ("benefit:token_savings", "goal:cost_reduction") in pairs


def test_unknown_node_suggests_close_ids(kg):
    with pytest.raises(NodeNotFound) as err:
        kg.node("feature:prompt_cachin")
    assert "feature:prompt_caching" in err.value.suggestions


# -- writes ----------------------------------------------------------------------------------------
def test_writes_merge_and_bump_the_version(kg):
    v0 = kg.store.version()
    kg.add_edge("feature:prompt_caching", "benefit:token_savings", "enables", 0.4, {"evidence": "a"})
    kg.add_edge("feature:prompt_caching", "benefit:token_savings", "enables", 0.3, {"evidence": "b"})
    edge = kg.store.get_edge("feature:prompt_caching", "benefit:token_savings", "enables")
    assert edge.weight == pytest.approx(0.9)  # max(old, new)
    assert edge.properties["evidence"] == ["a", "b"]  # evidence accumulates
    assert kg.store.version() != v0
    node = kg.update_node("feature:batching", properties={"cost": 0.4, "new": True})
    assert node.properties == {"cost": 0.4, "new": True}
    assert kg.delete_edge("feature:batching", "feature:prompt_caching", "alternative_to") is True
    assert kg.delete_node("feature:batching") == 1  # its remaining edge goes with it
    assert (kg.store.node_count(), kg.store.edge_count()) == (4, 3)


def test_a_failed_write_changes_nothing(kg):
    v0, edges = kg.store.version(), kg.store.edge_count()
    with pytest.raises(NodeNotFound):
        kg.add_edge("feature:prompt_caching", "no:such_node", "enables")
    with pytest.raises(InvalidArgument):
        kg.add_node("Prompt caching", "feature", id="feature:prompt_caching")  # id taken
    assert (kg.store.version(), kg.store.edge_count()) == (v0, edges)


def test_sql_looking_text_is_stored_as_text(kg):
    props = {HOSTILE: "v'; DELETE FROM edges; --", "nested": {"a\"b": [1, "2; DROP SCHEMA kgos CASCADE"]}}
    node = kg.add_node(HOSTILE, HOSTILE, HOSTILE, props)
    assert kg.node(node.id).properties == props and kg.node(node.id).name == HOSTILE
    kg.add_edge(node.id, "feature:prompt_caching", HOSTILE)
    assert [n.node.id for n in kg.neighbors(node.id)] == ["feature:prompt_caching"]
    assert [n.id for n in kg.find_nodes(HOSTILE)] == [node.id]
    assert kg.store.node_count() == 6 and kg.store.edge_count() == 6


# -- everything above the store --------------------------------------------------------------------
def test_search_finds_by_text_and_after_a_write(kg):
    assert kg.search("prompt caching").results[0].node.id == "feature:prompt_caching"
    kg.add_node("Semantic cache", "feature", "Answer repeated questions from a quokka cache.", id="feature:sem")
    assert kg.search("quokka").results[0].node.id == "feature:sem"  # the snapshot follows the version


def test_search_by_meaning_with_stored_vectors(kg):
    report = kg.embed("hash")
    assert report.embedded == 5
    hits = kg.search("cached prompt prefix", mode="embedding").results
    assert hits and hits[0].node.id == "feature:prompt_caching"
    kg.add_node("Quokka keeper", "role", "Keeps quokkas fed.", id="role:keeper")  # embedded on write
    assert kg.search("quokkas fed", mode="embedding").results[0].node.id == "role:keeper"


def test_the_query_methods(kg):
    assert kg.want_to("reduce cost").results
    can = kg.can_it("prompt caching")
    assert can.status in ("yes", "yes_with_limitations", "no", "unknown") and can.explanation
    assert [r.node.id for r in kg.why_not("feature:prompt_caching").limitations] == ["limitation:cache_size"]
    assert kg.similar_to("feature:batching").results
    assert [a.node.id for a in kg.alternatives("feature:prompt_caching").explicit] == ["feature:batching"]
    assert kg.impact_analysis("feature:prompt_caching").total_impacted >= 3
    path = kg.trace_path("feature:prompt_caching", "goal:cost_reduction")
    assert (path.found, path.length) == (True, 2)
    assert kg.explore_smart("feature:prompt_caching").levels
    assert kg.edge_type_boost(["feature:prompt_caching"], ["enables"]).scores
    assert [m.node.id for m in kg.dimension_filter({"cost": {"max": 0.3}}).results] == ["feature:prompt_caching"]
    assert kg.keyword_match("prompt caching").results[0].node.id == "feature:prompt_caching"
    assert kg.compose_for("reduce cost").steps
    assert kg.classify_intent("how do I reduce cost").intents
    assert kg.nodes_page(limit=1, type="feature")[0] == 2


def test_validation_and_stats(kg):
    report = kg.validate()
    assert report.errors == 0
    stats = kg.stats()
    assert (stats.nodes, stats.edges, stats.components) == (5, 5, 1)


@pytest.mark.parametrize("fmt", ["nodelink", "jsonl", "csv", "graphml"])
def test_export_then_import_is_the_same_kg(backend_ws, kg, tmp_path, fmt):
    backend, ws, db_id = backend_ws
    suffix = {"nodelink": "out.json", "jsonl": "out.jsonl", "csv": "out_csv", "graphml": "out.graphml"}[fmt]
    path = ws.export(db_id, tmp_path / suffix, fmt)
    ws.import_file("back", path, fmt, dimensions=False)  # the format round trip, nothing inferred
    back = ws.kg("back")

    def content(g):
        nodes = sorted((n.id, n.name, n.type, n.description, json.dumps(n.properties, sort_keys=True))
                       for n in g.nodes())
        edges = sorted((e.source, e.target, e.type, round(e.weight, 6)) for e in g.edges())
        return nodes, edges
    assert content(back) == content(kg)
    assert ws.info("back").kind == ("postgres" if backend in ("postgres", "pushdown") else "native")


def test_evaluation_scores_the_same_probes(kg, tmp_path):
    from kgos.eval.probes import load_probes
    from kgos.eval.run import evaluate, kg_ranker
    probes = [{"id": "p1", "query": "prompt caching", "relevant": ["feature:prompt_caching"], "level": "literal"},
              {"id": "p2", "query": "half the cost", "relevant": ["feature:batching"], "level": "goal"}]
    path = tmp_path / "probes.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in probes))
    report = evaluate(load_probes(path), kg_ranker(kg))
    assert report.n == 2 and report.strict["recall@10"] == pytest.approx(1.0)
