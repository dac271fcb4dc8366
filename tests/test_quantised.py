"""The int8 scan of mid-sized KGs (index/quantised.py): its scores against the float32 product, the
exact re-scoring of its best rows, the background copy that is only used for its own snapshot, and the
float32 scan wherever the copy is missing, stale, failed or a filter asks for exact scores."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import GREEK, word_chain_kg
from test_vector_search import FakeSnap, clustered, ranking

from kgos.index import nearest, quantised

WORDS = GREEK[:12]


@pytest.fixture
def kg(ws):
    return word_chain_kg(ws, WORDS)


def snap_of(vectors: np.ndarray) -> FakeSnap:
    snap = FakeSnap(vectors)
    snap.quantised, snap.scans = None, 0
    return snap


def test_the_int8_scan_is_within_a_hundredth_of_the_float32_product():
    vectors = clustered(5_000, 64, seed=1)
    q8 = quantised.quantise(vectors, "v1", "m")
    assert q8.matrix.dtype == np.int8 and q8.matrix.shape == (64, 5_000) and q8.rows == 5_000
    for query in clustered(20, 64, seed=2):
        exact = vectors @ query
        approx = quantised.scan(q8, query)
        assert approx.dtype == np.float32 and np.abs(approx - exact).max() < 0.01
        assert np.argmax(approx) == np.argmax(exact)


def test_quantising_in_chunks_equals_one_pass_and_a_zero_column_or_query_is_harmless(monkeypatch):
    vectors = clustered(1_000, 16, seed=5)
    vectors[:, 3] = 0.0  # a dimension no row uses: its scale must not divide by zero
    whole = quantised.quantise(vectors)
    monkeypatch.setattr(quantised, "CHUNK", 64)
    chunked = quantised.quantise(vectors)
    assert np.array_equal(whole.matrix, chunked.matrix) and np.array_equal(whole.scale, chunked.scale)
    assert np.all(whole.matrix[3] == 0)
    assert np.array_equal(quantised.scan(whole, np.zeros(16, np.float32)), np.zeros(1_000, np.float32))


def test_the_best_rows_of_the_scan_carry_exact_cosines(monkeypatch):
    monkeypatch.setattr(quantised, "MIN_ROWS", 100)
    monkeypatch.setattr(quantised, "RESCORE", 50)
    vectors = clustered(3_000, 64, seed=3)
    snap = snap_of(vectors)
    quantised.attach(snap, wait=True)
    assert quantised.fresh(snap.quantised, snap)
    for query in clustered(10, 64, seed=4):
        exact = nearest.similarities(snap, query, exact=True)
        fast = nearest.similarities(snap, query)
        top = np.argsort(-exact)[:10]
        assert np.array_equal(np.argsort(-fast)[:10], top)
        assert np.allclose(fast[top], exact[top], atol=1e-6)  # the ranked rows: exact scores
        assert not np.allclose(fast, exact, atol=1e-6)  # the rest: the int8 approximation


def test_a_snapshot_scans_float32_until_its_own_copy_is_ready(monkeypatch):
    monkeypatch.setattr(quantised, "MIN_ROWS", 100)
    vectors = clustered(2_000, 32, seed=6)
    snap = snap_of(vectors)
    started = []
    monkeypatch.setattr(quantised, "attach", lambda s, wait=False: started.append(s))  # the build never ends
    query = clustered(1, 32, seed=7)[0]
    assert np.array_equal(nearest.similarities(snap, query), nearest.cosine_all(vectors, query))
    assert started == [snap]
    snap.quantised = quantised.quantise(vectors, "v0", "m")  # a copy of another version: never used
    assert np.array_equal(nearest.similarities(snap, query), nearest.cosine_all(vectors, query))


def test_the_copy_is_started_by_the_third_scan_of_a_snapshot_and_never_twice(monkeypatch):
    monkeypatch.setattr(quantised, "MIN_ROWS", 100)
    builds = []
    real = quantised.quantise
    monkeypatch.setattr(quantised, "quantise", lambda *a: builds.append(a) or real(*a))
    vectors = clustered(1_000, 16, seed=8)
    snap = snap_of(vectors)
    query = clustered(1, 16, seed=9)[0]
    for _ in range(quantised.START_AFTER):  # a one-off CLI search: no copy, no thread
        assert np.array_equal(nearest.similarities(snap, query), nearest.cosine_all(vectors, query))
    quantised.join_builds(10.0)
    assert builds == [] and snap.quantised is None
    nearest.similarities(snap, query)  # the third scan starts the build
    quantised.join_builds(10.0)
    assert len(builds) == 1 and quantised.fresh(snap.quantised, snap)
    for _ in range(3):
        nearest.similarities(snap, query)
    quantised.join_builds(10.0)
    assert len(builds) == 1


def test_a_failed_copy_is_not_retried_and_search_still_answers(kg, monkeypatch):
    monkeypatch.setattr(quantised, "MIN_ROWS", 5)
    calls = []

    def broken(*args):
        calls.append(args)
        raise MemoryError("no room for the copy")
    monkeypatch.setattr(quantised, "quantise", broken)
    expected = None
    for _ in range(3):
        kg.engine.cache.clear()
        snap = kg.engine.snapshot()
        quantised.attach(snap, wait=True)
        got = ranking(kg.search("gamma widget", k=5))
        assert got and (expected is None or got == expected)
        expected = got
    assert snap.quantised is quantised.FAILED and len(calls) == 1


def test_search_through_the_int8_copy_ranks_and_scores_as_the_float32_scan(kg, monkeypatch):
    queries = ("gamma widget", "theta widget keepers", "beta alpha widget", "quokka")
    exact = {q: ranking(kg.search(q, k=len(WORDS))) for q in queries}
    monkeypatch.setattr(quantised, "MIN_ROWS", 5)
    kg.engine.cache.clear()
    snap = kg.engine.snapshot()
    quantised.attach(snap, wait=True)
    assert quantised.fresh(snap.quantised, snap)
    for q in queries:
        assert ranking(kg.search(q, k=len(WORDS))) == exact[q]  # 12 rows: every one re-scored exactly


def test_a_write_makes_a_new_copy_and_the_new_node_is_found(kg, monkeypatch):
    monkeypatch.setattr(quantised, "MIN_ROWS", 5)
    old = kg.engine.snapshot()
    quantised.attach(old, wait=True)
    kg.add_node("omega widget", "thing", "The omega widget.", id="new")
    fresh = kg.engine.snapshot()
    assert fresh.version != old.version and not quantised.fresh(fresh.quantised, fresh)
    assert kg.search("omega widget", k=1).results[0].node.id == "new"  # float32 while the copy builds
    quantised.attach(fresh, wait=True)
    assert quantised.fresh(fresh.quantised, fresh) and fresh.quantised.rows == len(WORDS) + 1
    kg.engine.cache.clear()
    assert kg.search("omega widget", k=1).results[0].node.id == "new"


def test_small_kgs_and_filtered_searches_never_use_a_copy(kg, monkeypatch):
    snap = kg.engine.snapshot()
    query = kg.engine.embed_query("gamma widget")
    nearest.similarities(snap, query)
    assert snap.quantised is None  # 12 rows: below MIN_ROWS, nothing is built
    monkeypatch.setattr(quantised, "MIN_ROWS", 5)
    nearest.similarities(snap, query, exact=True)  # a pre-filter asks for exact scores
    assert snap.quantised is None
