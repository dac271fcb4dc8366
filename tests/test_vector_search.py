"""The query path's vector side (issue 14): the query-vector cache, one BLAS thread for query-time
products, compact vector storage, and the approximate index checked against the exact scan."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from kgos.index import nearest

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


@pytest.fixture
def kg(ws):
    g = ws.create("t")
    for i, w in enumerate(WORDS):
        g.add_node(f"{w} {WORDS[(i + 1) % len(WORDS)]} widget", "thing", f"The {w} widget for quokka keepers.",
                   id=f"n{i}")
    for i in range(len(WORDS) - 1):
        g.add_edge(f"n{i}", f"n{i + 1}", "relates_to")
    g.embed("hash")
    return g


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
