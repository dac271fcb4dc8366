"""Problem -> solution hops (issue 13, lever 0): a query that restates a problem, a goal or a benefit
also finds what answers it, one edge away; a query that names a node still gets that node first."""

from __future__ import annotations

import pytest

from kgos.retrieval.engine import SearchEngine
from kgos.retrieval.hybrid import SearchOptions


@pytest.fixture
def kg(ws):
    g = ws.create("fixes")
    add = g.add_node
    add("Image token cost", "limitation",
        "Screenshots and images are billed as many input tokens, so image-heavy requests cost a lot.", id="L")
    add("Downscale images", "workaround", "Resize large screenshots to a smaller resolution before sending them.", id="W")
    add("Vision input", "feature", "The model can read images and screenshots.", id="F")
    add("Batch API", "feature", "Submit many requests at half price.", id="B")
    add("Bulk classification", "use_case", "Label thousands of tickets or documents overnight.", id="U")
    add("Prompt caching", "feature", "Reuse a cached prompt prefix.", id="C")
    add("Nightly backups", "technique", "Copy thousands of files overnight.", id="N")  # a look-alike, no edge
    g.add_edge("W", "L", "reduces")
    g.add_edge("F", "L", "has_limitation")  # not a solution edge: the feature does not answer its limitation
    g.add_edge("B", "U", "used_for")
    g.add_edge("C", "B", "complements")
    return g


def ranks(result) -> dict[str, int]:
    return {h.node.id: h.rank for h in result.results}


def spec(kg):
    return SearchEngine(kg.store, options=SearchOptions(solution_hop=0, propagate=0))  # no one-hop additions


@pytest.mark.parametrize("query, problem, fix", [
    ("screenshots billed as many tokens", "L", "W"),  # a restated limitation -> the workaround that reduces it
    ("label thousands of tickets overnight", "U", "B"),  # a described use case -> the feature used for it
])
def test_the_fix_follows_the_restated_problem(kg, query, problem, fix):
    before, after = ranks(spec(kg).search(query)), ranks(kg.search(query))
    assert before[problem] == after[problem] == 1
    assert before[fix] > 2 and after[fix] == 2
    hit = next(h for h in kg.search(query).results if h.node.id == fix)
    assert hit.components.solution > 0 and "solution" in hit.method


def test_a_query_that_names_the_node_passes_nothing_on(kg):
    for query in ("image token cost", "bulk classification"):
        res = kg.search(query)
        assert res.results[0].node.id in {"L", "U"}
        assert all(h.components.solution == 0 for h in res.results), query


def test_only_solution_edges_carry_relevance(kg):
    res = kg.search("screenshots billed as many tokens")
    feature = next(h for h in res.results if h.node.id == "F")
    assert feature.components.solution == 0  # has_limitation points from the feature to the problem


def test_scores_stay_the_ranking_scores(kg):
    scores = [h.score for h in kg.search("screenshots billed as many tokens").results]
    assert scores == sorted(scores, reverse=True)


def test_spec_formula_has_no_hops(kg):
    res = spec(kg).search("label thousands of tickets overnight")
    assert all(h.components.solution == 0 for h in res.results)
    for mode in ("fixed3", "fixed4", "embedding", "bm25", "graph"):
        assert all(h.components.solution == 0 for h in kg.search("label thousands of tickets", mode=mode).results)
