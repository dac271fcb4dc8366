"""The query path's vector side (issue 14): the query-vector cache, one BLAS thread for query-time
products, compact vector storage, and the approximate index checked against the exact scan."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from conftest import GREEK, word_chain_kg

from kgos.index import nearest

WORDS = GREEK[:12]


@pytest.fixture
def kg(ws):
    return word_chain_kg(ws, WORDS)


def ranking(result):
    return [(h.node.id, round(h.score, 6)) for h in result.results]


# -- the query-vector cache ------------------------------------------------------------------------
def test_a_repeated_query_is_not_embedded_again_and_ranks_the_same(kg, monkeypatch):
    embedder = kg.engine.query_embedder()
    calls = []
    original = embedder.embed_query
    monkeypatch.setattr(embedder, "embed_query", lambda text: calls.append(text) or original(text))
    first = kg.search("gamma widget quokka", k=5)
    kg.engine.cache.clear()  # the result cache would answer before the encoder is asked
    again = kg.search("  gamma   widget quokka ", k=5)  # the same text once whitespace is normalised
    assert calls == ["gamma widget quokka"]
    assert ranking(again) == ranking(first)
    kg.engine.cache.clear()
    kg.engine.vector_cache.clear()
    assert ranking(kg.search("gamma widget quokka", k=5)) == ranking(first)  # uncached: the same answer
    assert len(calls) == 2


def test_the_cached_vector_cannot_be_changed_by_a_caller(kg):
    vector = kg.engine.embed_query("delta widget")
    with pytest.raises(ValueError):
        vector[0] = 1.0
    assert kg.engine.embed_query("delta widget") is vector


def test_the_cache_is_keyed_by_model(kg):
    a = kg.engine.embed_query("epsilon widget")
    kg.engine.embedder_spec, kg.engine._embedder = "hash:64", None
    b = kg.engine.embed_query("epsilon widget")
    assert a.shape == (512,) and b.shape == (64,)


# -- one BLAS thread at query time -----------------------------------------------------------------
class Recording(np.ndarray):
    """A matrix that records the BLAS thread counts in force when it is multiplied."""

    seen: ClassVar[list[int]] = []

    def __matmul__(self, other):
        from threadpoolctl import threadpool_info
        Recording.seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return np.asarray(self) @ other


def test_query_time_products_run_on_one_blas_thread_and_restore_the_count():
    from threadpoolctl import threadpool_info, threadpool_limits
    with threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        m = np.eye(4, dtype=np.float32).view(Recording)
        Recording.seen = []
        scores = nearest.cosine_all(m, np.array([0, 1, 0, 0], np.float32))
        after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert list(scores) == [0, 1, 0, 0]
    assert Recording.seen and set(Recording.seen) == {1}
    assert after == before and set(before) == {2}


# -- compact vector storage (migration 002) --------------------------------------------------------
OLD_LAYOUT = """
CREATE TABLE old_vectors (node INTEGER NOT NULL REFERENCES nodes(rowid) ON DELETE CASCADE, model TEXT NOT NULL,
  dims INTEGER NOT NULL, content_hash TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, node)) WITHOUT ROWID;
INSERT INTO old_vectors SELECT node, model, dims, content_hash, vector FROM node_embeddings;
DROP TABLE node_embeddings;
ALTER TABLE old_vectors RENAME TO node_embeddings;
DELETE FROM kg_migrations WHERE name = '002_compact_vectors';
"""


def vector_rows(store):
    return sorted(store.conn.execute("SELECT n.id, e.model, e.dims, e.content_hash, e.vector FROM node_embeddings e "
                                     "JOIN nodes n ON n.rowid = e.node"))


def file_pages(store):
    return store.conn.execute("PRAGMA page_count").fetchone()[0] - store.conn.execute(
        "PRAGMA freelist_count").fetchone()[0]


def test_vectors_of_an_existing_kg_move_to_the_compact_table_on_open_with_their_hashes(tmp_path):
    from kgos.embed import get_embedder
    from kgos.embed.nodes import embed_store
    from kgos.store.migrations import run_script
    from kgos.store.native import NativeStore
    store = NativeStore.create(tmp_path / "kg.db", "t")
    with store.transaction() as conn:
        conn.executemany("INSERT INTO nodes (id, name, norm_name, type, description, created_at, updated_at) "
                         "VALUES (?, ?, ?, 'thing', ?, '', '')",
                         [(f"n{i}", f"item {i}", f"item {i}", f"widget number {i} of {i % 7}") for i in range(3000)])
    embedder = get_embedder("hash:384")  # 1.5 KB rows, as MiniLM's (the go KG's 3.05x)
    assert embed_store(store, embedder).embedded == 3000
    compact_pages = file_pages(store)
    with store.transaction() as conn:  # an existing KG, written before 002: vectors WITHOUT ROWID
        run_script(conn, OLD_LAYOUT)
    before, old_pages = vector_rows(store), file_pages(store)
    store.close()

    store = NativeStore(tmp_path / "kg.db", "t")  # opening migrates
    sql = store.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'node_embeddings'").fetchone()[0]
    assert "WITHOUT ROWID" not in sql
    assert vector_rows(store) == before  # every vector and content hash kept, byte for byte
    assert old_pages > 2 * compact_pages and file_pages(store) <= compact_pages * 1.05
    assert embed_store(store, embedder).embedded == 0  # unchanged text is not embedded again
    store.delete_node("n5")  # the cascade still removes a deleted node's vector
    assert store.conn.execute("SELECT count(*) FROM node_embeddings").fetchone()[0] == 2999
    store.close()


# -- the approximate index (index.ann) -------------------------------------------------------------
def clustered(n: int, dims: int, seed: int) -> np.ndarray:
    """Unit vectors around 50 centres, as real embeddings cluster by topic."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, dims))
    x = centres[rng.integers(0, 50, n)] + 0.6 * rng.standard_normal((n, dims))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class FakeSnap:
    def __init__(self, vectors, version="v1", model="m"):
        self.vectors, self.version, self.embedder, self.n, self.db_id = vectors, version, model, len(vectors), "t"
        self.ann = None


def test_the_approximate_path_finds_the_exact_top_10_and_scores_them_exactly():
    pytest.importorskip("faiss")
    from kgos.index import ann
    vectors = clustered(20_000, 64, seed=3)
    queries = clustered(50, 64, seed=4)
    snap = FakeSnap(vectors)
    snap.ann = ann.build(vectors, "v1", "m")
    hits = 0
    for q in queries:
        exact = nearest.similarities(snap, q, exact=True)
        approx = nearest.similarities(snap, q)
        top = np.argsort(-exact)[:10]
        found = np.argsort(-approx)[:10]
        hits += len(set(top) & set(found))
        assert np.allclose(approx[found], exact[found])  # candidates carry exact cosines
    assert hits / (10 * len(queries)) >= 0.98


def test_an_index_of_another_version_is_never_used_and_is_rebuilt(ws, monkeypatch):
    pytest.importorskip("faiss")
    from kgos.index import ann
    monkeypatch.setattr(ann, "MIN_ROWS", 5)
    g = ws.create("t")
    for i, w in enumerate(WORDS):
        g.add_node(f"{w} widget", "thing", f"The {w} widget.", id=f"n{i}")
    g.embed("hash")
    snap = g.engine.snapshot()
    nearest.attach_ann(snap, g.engine.cache_root, wait=True)
    assert snap.ann is not None and (snap.ann.version, snap.ann.rows) == (snap.version, len(WORDS))
    path = ann.index_file(g.engine.cache_root, "t", snap.embedder)
    assert ann.load(path, snap.version, snap.embedder, snap.n) is not None

    g.add_node("omega widget", "thing", id="new")  # a write: a new KG version
    fresh = g.engine.snapshot()
    assert fresh.version != snap.version
    assert ann.load(path, fresh.version, fresh.embedder, fresh.n) is None  # the saved one is stale
    stale = snap.ann
    fresh.ann = stale  # even if handed a stale index, a search ignores it and scans exactly
    assert np.allclose(nearest.similarities(fresh, g.engine.embed_query("omega widget")),
                       nearest.similarities(fresh, g.engine.embed_query("omega widget"), exact=True))
    nearest.attach_ann(fresh, g.engine.cache_root, wait=True)  # a stale index attached is replaced
    assert (fresh.ann.version, fresh.ann.rows) == (fresh.version, len(WORDS) + 1)
    assert g.search("omega widget", k=1).results[0].node.id == "new"


def test_a_large_kg_without_faiss_scans_exactly_and_says_which_extra_to_install(kg, monkeypatch):
    import sys

    from kgos.errors import MissingDependency
    from kgos.index import ann
    monkeypatch.setattr(ann, "MIN_ROWS", 5)
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss raises ImportError
    with pytest.raises(MissingDependency, match=r"kgos\[ann\]"):
        ann.build(np.eye(8, dtype=np.float32), "v", "m")
    result = kg.search("gamma widget", k=3)
    assert result.results and any("kgos[ann]" in n and "scanned exactly" in n for n in result.notes)
    assert kg.engine.snapshot().ann is None


# -- top-k over long signals -----------------------------------------------------------------------
def test_top_indices_of_long_signals_equal_a_full_sort():
    from kgos.retrieval.hybrid import top_indices
    rng = np.random.default_rng(7)
    for trial in range(120):
        n = int(rng.choice([100, 5_000, 70_000, 300_000]))
        k = int(rng.choice([1, 10, 30, 300]))
        x = rng.random(n).astype(np.float32)
        x[rng.random(n) < rng.random()] = 0  # from all non-zero to almost all zero
        if trial % 3 == 0:
            x = np.round(x * 20) / 20  # ties at the k-th value
        nz = np.flatnonzero(x > 0)
        expected = nz[np.argsort(-x[nz], kind="stable")][:k]
        got = top_indices(x, k)
        assert np.array_equal(x[got], x[expected]) and len(set(got)) == len(got)


def test_rows_outside_the_index_candidates_that_could_rank_get_their_exact_embedding_score(kg, monkeypatch):
    pytest.importorskip("faiss")
    from kgos.index import ann
    # every node has text for these (all are widgets): a node reachable by its embedding alone must be
    # among the index's candidates, which is what recall@10 measures; here the others are filled in
    queries = ("gamma widget", "theta widget keepers", "beta alpha widget")
    exact = {q: ranking(kg.search(q, k=len(WORDS))) for q in queries}  # every row, scores included
    monkeypatch.setattr(ann, "MIN_ROWS", 5)
    monkeypatch.setattr(ann, "PROBE_FRACTION", 1.0)
    monkeypatch.setattr(ann, "CANDIDATES", 10)  # as many as the embedding seeds; the last 2 rows are filled in
    kg.engine.invalidate()
    snap = kg.engine.snapshot()
    nearest.attach_ann(snap, kg.engine.cache_root, wait=True)
    assert nearest.approximate(snap)
    for q, expected in exact.items():
        kg.engine.cache.clear()
        got = kg.search(q, k=len(WORDS))
        assert snap.ann is not None and ranking(got) == expected
