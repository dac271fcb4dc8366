"""BM25's coordination factor (issue 13: generic alias words must not win the text signal alone)."""

from __future__ import annotations

from kgos.retrieval.engine import SearchEngine
from kgos.retrieval.hybrid import SearchOptions


def test_one_rare_word_does_not_outrank_a_node_with_every_query_word(ws):
    g = ws.create("coord")
    g.add_node("Support assistant", "use_case", "An assistant.", id="generic",
               properties={"aliases": ["assistant"]})  # a short text made of one rare-ish word
    for i in range(8):  # "reply" and "customer" are common: low IDF
        g.add_node(f"Filler {i}", "note", "customer reply text", id=f"f{i}")
    g.add_node("Draft replies", "technique", "Write a draft reply to each customer email for review.", id="answer")
    query = "draft a customer reply with an assistant"
    spec = SearchEngine(g.store, options=SearchOptions(coord=0)).search(query, mode="bm25")
    assert spec.results[0].node.id == "generic"  # before: the one-word alias wins the max-normalised text
    res = g.search(query, mode="bm25")
    assert res.results[0].node.id == "answer"
