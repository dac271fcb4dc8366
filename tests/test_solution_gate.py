"""The solution hop's gate and edge grades (issue 13 lever 0, docs/defaults.md "Solution hop
re-measured on the topk/propagate fusion"): a seed the query half names still passes most of its
score on (gate 1 - coverage**2), and a prerequisite (`requires`) gets half of what a fix gets."""

from __future__ import annotations

import pytest

from kgos.errors import InvalidArgument
from kgos.retrieval import intents as I
from kgos.retrieval.engine import SearchEngine
from kgos.retrieval.hybrid import SearchOptions

QUERY = "image token bill"  # 2 of its 3 terms are words of the limitation's name: coverage 2/3
COVERAGE = 2 / 3


@pytest.fixture
def kg(ws):
    g = ws.create("gate")
    g.add_node("Image token cost", "limitation", "Screenshots are billed as many input tokens.", id="L")
    g.add_node("Downscale screenshots", "workaround", "Resize to a smaller resolution first.", id="W")
    g.add_node("Vision input", "feature", "The model reads pictures.", id="R")
    g.add_node("Prompt caching", "feature", "Reuse a cached prompt prefix.", id="C")
    g.add_edge("L", "W", "has_workaround")  # the fix
    g.add_edge("L", "R", "requires")  # a prerequisite, not the fix
    return g


def solution(kg, **options) -> dict[str, float]:
    res = SearchEngine(kg.store, options=SearchOptions(**options)).search(QUERY)
    assert res.results[0].node.id == "L"  # the restated problem is the one seed in every setting
    return {h.node.id: h.components.solution for h in res.results}


def test_the_square_gate_passes_one_plus_coverage_times_the_linear_one(kg):
    linear, square = solution(kg, solution_gate="linear"), solution(kg, solution_gate="square")
    assert linear["W"] > 0
    assert square["W"] == pytest.approx(linear["W"] * (1 + COVERAGE), rel=1e-5)  # (1 - c^2) / (1 - c)


def test_graded_edges_pass_half_to_a_prerequisite(kg):
    uniform, graded = solution(kg, solution_edges="uniform"), solution(kg, solution_edges="graded")
    assert uniform["R"] == pytest.approx(uniform["W"]) and uniform["W"] > 0
    assert graded["W"] == pytest.approx(uniform["W"])
    assert graded["R"] == pytest.approx(0.5 * graded["W"], rel=1e-5)
    assert I.SOLUTION_EDGE_WEIGHTS["graded"]["requires"] == 0.5


def test_the_defaults_are_the_measured_square_gate_and_graded_edges(kg):
    o = SearchOptions()
    assert (o.solution_gate, o.solution_edges, o.solution_hop) == ("square", "graded", 0.5)
    shown = {h.node.id: h.components.solution for h in kg.search(QUERY).results}
    old = solution(kg, solution_gate="linear", solution_edges="uniform")
    assert shown["W"] == pytest.approx(old["W"] * (1 + COVERAGE), rel=1e-5)
    assert shown["R"] == pytest.approx(old["R"] * (1 + COVERAGE) * 0.5, rel=1e-5)


def ranks(kg, **options) -> dict[str, int]:
    res = SearchEngine(kg.store, options=SearchOptions(**options)).search(QUERY)
    return {h.node.id: h.rank for h in res.results}


def test_the_fix_outranks_the_prerequisite_only_with_the_new_default(kg):
    old = ranks(kg, solution_gate="linear", solution_edges="uniform")
    new = {h.node.id: h.rank for h in kg.search(QUERY).results}
    assert old["R"] < old["W"]  # before: the limitation's prerequisite above its workaround
    assert new["W"] == 2 and new["W"] < new["R"]  # now: the workaround right below the restated problem


def test_a_query_that_is_the_name_passes_nothing_with_either_gate(kg):
    for gate in ("linear", "square"):
        res = SearchEngine(kg.store, options=SearchOptions(solution_gate=gate)).search("image token cost")
        assert res.results[0].node.id == "L"
        assert all(h.components.solution == 0 for h in res.results), gate


@pytest.mark.parametrize("bad", [{"solution_gate": "cubic"}, {"solution_edges": "steep"}])
def test_unknown_choices_are_refused(kg, bad):
    with pytest.raises(InvalidArgument, match=next(iter(bad))):
        SearchEngine(kg.store, options=SearchOptions(**bad)).search(QUERY)


def test_the_spec_formula_has_no_hop():
    assert SearchOptions.spec().solution_hop == 0.0
