"""Pushdown mode of PostgreSQL KGs (retrieval.pushdown, store.postgres_pushdown; docs/postgres.md):
the same answers as the in-memory methods on a random graph, explanations that add up, how the mode
is chosen, and the bounds (planner estimate, statement timeout, a KG deleted meanwhile). Needs a
server with pgvector (the dev extra's pgserver): skipped with the reason without one."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from postgres_cluster import running_vector_cluster

import kgos
from kgos.errors import InvalidArgument, KGNotFound, QueryTooBroad
from kgos.index import snapshot as snapshots
from kgos.index.text import Analyzer, TextConfig, TextIndex
from kgos.methods import pushdown, structure
from kgos.retrieval import hybrid
from kgos.retrieval.engine import SearchEngine
from kgos.retrieval.pushdown import PushdownEngine, query_lexemes, subgraph_snapshot, with_kg_idf
from kgos.store import postgres_pushdown
from kgos.store.postgres import PostgresStore
from kgos.store.postgres_db import PgDatabase
from kgos.store.postgres_pushdown import HNSW_DEFAULT, hnsw_settings

WORDS = ("cache", "prompt", "token", "batch", "latency", "cost", "stream", "model", "vector", "graph",
         "index", "query", "shard", "replica", "quokka", "lemur")
TYPES = ("enables", "requires", "achieves", "relates_to")


@pytest.fixture(scope="module")
def url():
    return running_vector_cluster().new_database()


@pytest.fixture(scope="module")
def graph(url, tmp_path_factory):
    """A random 300-node, 900-edge KG in pushdown mode (imported: one COPY), embedded with the hash model."""
    home = tmp_path_factory.mktemp("home")
    rng = random.Random(7)
    nodes = []
    for i in range(300):
        words = " ".join(rng.sample(WORDS, 3))
        nodes.append({"id": f"n:{i}", "name": f"Node {i} {words}", "type": "thing", "description": f"About {words}."})
    pairs: set[tuple[int, int, str]] = set()
    while len(pairs) < 900:
        a, b = rng.randrange(300), rng.randrange(300)
        if a != b:
            pairs.add((a, b, rng.choice(TYPES)))
    edges = [{"source": f"n:{a}", "target": f"n:{b}", "type": t, "weight": round(rng.uniform(0.1, 1.0), 3)}
             for a, b, t in sorted(pairs)]
    path = home / "g.json"
    path.write_text(json.dumps({"nodes": nodes, "edges": edges}))
    ws = kgos.Workspace(home / "ws", database_url=url)
    ws.import_file("g", path, "nodelink")
    g = ws.kg("g")
    g.store.set_meta(pushdown="on")
    g.embed("hash")
    yield ws, g
    ws.close()


def test_the_engine_pushes_down_and_every_hit_explains_its_score(graph):
    _, g = graph
    assert isinstance(g.engine, PushdownEngine)
    result = g.search("quokka cache latency", k=10)
    assert result.results and any(n.startswith("pushdown: ranked") for n in result.notes)
    for hit in result.results:
        assert hit.score == pytest.approx(hit.explained(), abs=1e-9)
        assert "quokka" in hit.node.name or "cache" in hit.node.name or "latency" in hit.node.name
    top = result.results[0].node.name
    assert sum(w in top for w in ("quokka", "cache", "latency")) >= 2


def test_the_lean_subgraph_snapshot_ranks_as_the_full_build(graph):
    """Search ranks its candidates on ``subgraph_snapshot`` (no row digests, no eager PageRank, texts
    analysed once): the same hits, scores and explanations as ``index.snapshot.build`` of the same
    candidates, for every mode that reads the snapshot."""
    _, g = graph
    engine, model = g.engine, g.engine._vector_model()
    for query in ("quokka cache latency", "Node 17", "shard replica", "lemur token batch stream"):
        _, sub, _, _, _ = engine._candidates(query, engine.embed_query(query), model, g.store.version(), {})
        snaps = (snapshots.build(sub, engine.text, model), subgraph_snapshot(sub, engine._analyzer(), model))
        for mode in ("hybrid", "bm25", "embedding", "names"):
            got = [hybrid.search(snap, sub, query, 10, None, None, mode, engine.options,
                                 embed_query=engine.embed_query).results for snap in snaps]
            assert got[0] or mode == "names", (query, mode)  # names: only queries that name a node
            assert [(h.node.id, h.score, h.explained()) for h in got[0]] == \
                [(h.node.id, h.score, h.explained()) for h in got[1]], (query, mode)


def test_a_search_on_one_pooled_connection_never_waits_on_itself(graph, url):
    """The HNSW probe runs on a second connection beside the text reads; the reads hold none while
    they wait for it, so a pool of one serves a search (a hold-and-wait would end in StoreBusy), also
    the first search of a model, which builds its HNSW index (it read the KG's settings on a second
    connection while holding one: StoreBusy)."""
    _, g = graph
    with g.engine.pd.session() as conn:
        for (name,) in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname "
                                    "LIKE 'pd_hnsw_%%'", (g.store.schema,)).fetchall():
            conn.execute(f"DROP INDEX {g.store.s}.{name}")
    db = PgDatabase(url, pool_max=1, wait=3)
    try:
        engine = PushdownEngine(PostgresStore(db, "g"))
        result = engine.search("quokka cache latency", k=5)
        assert result.results and any(re.search(r"[1-9]\d* by vector", n) for n in result.notes)
    finally:
        db.close()


def test_the_text_bound_note_comes_when_the_bound_is_reached(graph, monkeypatch):
    _, g = graph
    pd = g.engine.pd
    found, note = pd.text_candidates("cache", 5)
    assert len(found) == 5 and note is None  # ~56 of 300 nodes have the word: under the bound of 2,000
    monkeypatch.setattr(postgres_pushdown, "TEXT_MATCH_BOUND", 20)
    found, note = pd.text_candidates("cache", 5)
    assert len(found) == 5 and note is not None and "20 of them were ranked" in note


def test_text_candidates_drop_stopwords_and_match_inflections_as_the_ranking_does(graph):
    """The ranking's BM25 drops stopwords and stems; the stored tsvector does neither. With the
    ranking's analyzer the text query asks for what it scores: "the" and "of" are not asked for (an
    any-word query matched nearly every node through them), "caches" finds "cache" (``cach:*``)."""
    _, g = graph
    pd = g.engine.pd
    assert pd.text_candidates("caches of the tokens", 50) == ([], None)  # the literal words: no node has them
    analyzer = Analyzer(TextConfig())
    found, _ = pd.text_candidates("caches of the tokens", 50, analyzer)
    rows = {int(r[0]): r for r in pd.node_rows([r for r, _ in found])}
    names = [rows[r][2] for r, _ in found]
    assert len(found) == 50 and all("cache" in n or "token" in n for n in names)
    both = ["cache" in n and "token" in n for n in names]
    assert any(both) and both == sorted(both, reverse=True)  # the nodes with every word first
    top = g.search("caches of the tokens", k=5).results
    assert all("cache" in h.node.name and "token" in h.node.name for h in top)


def test_the_query_words_bm25_weight_is_the_kgs_not_the_candidates(graph):
    """Candidates picked for a word all have it: among them its idf is ~0, in the KG it is rare. With
    the KG's document frequencies (``document_frequencies``, one bounded read) the subgraph's BM25 of
    the query's words equals the whole-KG index's (b = 0: no length normalisation, whose average
    length is the candidates')."""
    _, g = graph
    config = TextConfig(b=0.0)
    analyzer = Analyzer(config)
    nodes = list(g.store.iter_nodes())
    full = TextIndex.build([snapshots.node_fields(n) for n in nodes], config)
    picked = [i for i, n in enumerate(nodes) if "quokka" in n.name][:20]
    sub = TextIndex.build([snapshots.node_fields(nodes[i]) for i in picked], config)
    query = "quokkas and lemurs"
    before = sub.scores(sub.query_terms(query))
    lexemes = query_lexemes(query, analyzer)
    with_kg_idf(sub, lexemes, *g.engine.pd.document_frequencies(sorted(set(lexemes.values()))))
    want = full.scores(full.query_terms(query))[picked]
    assert not np.allclose(before, want, rtol=1e-3)
    assert np.allclose(sub.scores(sub.query_terms(query)), want, rtol=1e-5)


def test_a_write_is_searchable_at_once_vector_included(graph):
    _, g = graph
    g.add_node("Wombat ledger", "thing", "Bookkeeping for wombats.", id="n:wombat")
    assert g.search("wombat ledger", k=3).results[0].node.id == "n:wombat"
    assert g.search("wombats bookkeeping", k=3, mode="embedding").results[0].node.id == "n:wombat"
    g.delete_node("n:wombat")
    assert all(h.node.id != "n:wombat" for h in g.search("wombat ledger", k=3).results)


def test_impact_and_trace_agree_with_the_in_memory_methods(graph):
    _, g = graph
    view = g.view()  # the whole-KG snapshot, for comparison only
    for i in (0, 17, 123):
        nid = f"n:{i}"
        for direction in ("forward", "backward", "both"):
            mine = g.impact_analysis(nid, direction=direction, max_depth=3)
            ref = structure.impact(view, view.row(nid), direction, 3)
            assert mine.total_impacted == ref.total_impacted
            assert mine.counts_by_depth == ref.counts_by_depth
            assert mine.edge_types_traversed == ref.edge_types_traversed
        for j in (5, 250, 299):
            mine = g.trace_path(nid, f"n:{j}", max_depth=4)
            ref = structure.trace(view, view.row(nid), view.row(f"n:{j}"), 4)
            assert (mine.found, mine.length) == (ref.found, ref.length)
            if mine.found:  # a valid path: consecutive steps joined by an edge of the stated type and direction
                for prev, step in zip(mine.path, mine.path[1:]):
                    src, dst = (prev.node.id, step.node.id) if step.direction == "forward" else (step.node.id, prev.node.id)
                    assert g.store.get_edge(src, dst, step.edge_type) is not None


def test_a_walk_past_the_bound_is_refused_before_it_runs(graph, monkeypatch):
    _, g = graph
    monkeypatch.setattr(g.engine.pd, "max_rows", 50)
    v0 = g.store.version()
    with pytest.raises(QueryTooBroad, match="would walk about"):
        g.impact_analysis("n:0", max_depth=5)
    assert g.impact_analysis("n:0", max_depth=1).total_impacted >= 1  # one hop stays under the bound
    assert g.store.version() == v0


def test_a_statement_past_the_timeout_is_a_clear_error(graph, monkeypatch):
    _, g = graph
    pd = g.engine.pd
    monkeypatch.setattr(pd, "timeout_ms", 50)
    with pytest.raises(QueryTooBroad, match="statement timeout"), pd.session() as conn:
        conn.execute("SELECT pg_sleep(1)")  # a statement past the bound, whatever it is
    monkeypatch.setattr(pd, "timeout_ms", 5000)
    assert g.impact_analysis("n:1", max_depth=2).total_impacted >= 1  # the next query is served


def test_the_deepest_level_ranked_in_the_database_is_the_python_ranking(graph):
    """Impact ranks its deepest level in SQL (most reached nodes are there); one level deeper, the
    same level comes back whole and is ranked in Python: the same counts, nodes, risks and path."""
    _, g = graph
    pd = g.engine.pd
    checked = 0
    for i in (0, 17, 123, 250):
        nid = f"n:{i}"
        root = pd.rowids_of([nid])[nid]
        for direction in ("both", "forward", "backward"):
            result = g.impact_analysis(nid, direction=direction, max_depth=2, per_depth=4)
            with pd.session():
                levels, _ = pushdown._walk(pd, root, direction, 3, 4, pd.top_degree())
            if len(levels) < 3:  # nothing at depth 2 that way (an in-edge-less root)
                assert 2 not in result.counts_by_depth
                continue
            ids = {r[0]: r[1] for r in pd.node_rows([r[0] for lv in levels for r in lv])}
            deepest = sorted(levels[2], key=lambda r: (-r[6], r[0]))[:4]
            assert result.counts_by_depth[2] == len(levels[2]) > 0
            assert [(h.node.id, h.risk, h.weight) for h in result.risk_by_depth[2]] == [
                (ids[r[0]], r[6], r[3]) for r in deepest]
            _, _, best = min((-r[7], d, r[0]) for d, lv in enumerate(levels[:3]) for r in lv)
            assert result.critical_path[-1].id == ids[best]
            checked += 1
    assert checked >= 10


def test_hnsw_build_settings_are_a_kg_option(graph):
    _, g = graph
    pd = g.engine.pd
    assert hnsw_settings(None) == hnsw_settings("") == HNSW_DEFAULT
    assert hnsw_settings(" m=24, ef_construction=128 ") == (24, 128)
    for bad in ("m=1", "m=24,ef_construction=20", "ef=3", "m=x"):
        with pytest.raises(InvalidArgument, match="pushdown_hnsw"):
            hnsw_settings(bad)
    model = g.engine._vector_model()
    g.store.set_meta(pushdown_hnsw="m=20,ef_construction=100")  # not the default
    try:
        pd.rebuild_vector_index(model)
        with pd.session() as conn:
            defs = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND "
                                               "indexname LIKE 'pd_hnsw_%%'", (g.store.schema,))]
        assert len(defs) == 1 and "m='20'" in defs[0] and "ef_construction='100'" in defs[0]
        assert g.search("quokka cache latency", k=3, mode="embedding").results  # served by the new index
    finally:
        g.store.set_meta(pushdown_hnsw="")
        pd.rebuild_vector_index(model)


def test_how_the_mode_is_chosen(url, tmp_path, monkeypatch):
    ws = kgos.Workspace(tmp_path / "home", database_url=url)
    ws.create("small")
    ws.kg("small").add_node("One", "thing")
    monkeypatch.setenv("KGOS_PUSHDOWN", "auto")
    assert type(kgos.Workspace(tmp_path / "a", database_url=url).kg("small").engine) is SearchEngine
    monkeypatch.setenv("KGOS_PUSHDOWN_NODES", "0")  # auto: by size (the planner's count)
    assert isinstance(kgos.Workspace(tmp_path / "b", database_url=url).kg("small").engine, PushdownEngine)
    ws.kg("small").store.set_meta(pushdown="off")  # the KG's own setting wins over the environment
    assert type(kgos.Workspace(tmp_path / "c", database_url=url).kg("small").engine) is SearchEngine
    same = ws.kg("small")  # an open KG follows its setting at the next version
    assert type(same.engine) is SearchEngine
    same.store.set_meta(pushdown="on")
    assert isinstance(same.engine, PushdownEngine)
    ws.kg("small").store.set_meta(pushdown="sometimes")
    with pytest.raises(InvalidArgument, match="choose on, off or auto"):
        kgos.Workspace(tmp_path / "d", database_url=url).kg("small").engine  # noqa: B018
    ws.delete("small")


def test_a_kg_deleted_by_another_server_is_not_found(url, tmp_path):
    a = kgos.Workspace(tmp_path / "a", database_url=url)
    a.create("gone")
    a.kg("gone").store.set_meta(pushdown="on")
    a.kg("gone").add_node("Prompt caching", "feature", id="f:pc")
    b = kgos.Workspace(tmp_path / "b", database_url=url)
    kg_b = b.kg("gone")
    assert kg_b.search("prompt caching").results[0].node.id == "f:pc"
    a.pg.drop_kg("gone")
    with pytest.raises(KGNotFound):
        kg_b.search("prompt caching again")
    with pytest.raises(KGNotFound):
        kg_b.impact_analysis("f:pc")
