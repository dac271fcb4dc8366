"""The twelve query methods (spec/000 section 6) on a small hand-built KG with known answers, and
their handling of bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import write_nodelink

import kgos
from kgos.errors import AmbiguousNode, InvalidArgument, NodeNotFound
from kgos.methods import RetrievalConfig, classify_intent
from kgos.methods.language import decompose, goal_keywords
from kgos.methods.structure import criticality
from kgos.methods.view import view_of


def n(id: str, name: str, type: str, description: str = "", **properties) -> dict:
    return {"id": id, "name": name, "type": type, "description": description, "properties": properties}


def e(source: str, target: str, type: str, weight: float = 1.0) -> dict:
    return {"source": source, "target": target, "type": type, "weight": weight}


NODES = [
    n("goal:save", "Save money", "goal", "Spend less on the API bill", aliases=["reduce costs"]),
    n("benefit:fewer", "Fewer tokens", "benefit", "Less input is billed"),
    n("feature:cache", "Response cache", "feature", "Keep answers for repeated prompts"),
    n("feature:batch", "Batch jobs", "feature", "Asynchronous bulk requests at half price"),
    n("feature:exec", "Code execution", "feature", "Run Python in a sandbox"),
    n("feature:files", "Files upload", "feature", "Upload files once, reference them later"),
    n("capability:edit", "Edit binary files", "capability", "Change bytes of a binary file"),
    n("limitation:text", "Text only output", "limitation", "Models emit text"),
    n("workaround:b64", "Base64 round trip", "workaround", "Encode, edit, decode"),
    n("capability:teleport", "Teleport data", "capability", "Move data instantly anywhere"),
    n("limitation:physics", "Physics", "limitation", "Nothing moves instantly"),
    n("capability:pdf", "Read PDF documents", "capability", "Extract the text of PDF documents"),
    n("step:upload", "Upload the file", "step", "Put the data file in storage"),
    n("tool:reader", "CSV reader", "tool", "Read CSV data into a table"),
    n("tool:analyzer", "Trend analyzer", "tool", "Analyze trends over time"),
    n("tool:writer", "Report writer", "tool", "Generate a report document"),
    n("tool:paste", "Paste data", "tool", "Paste CSV data into the prompt"),
    n("concept:island", "Island", "concept", "Connected to nothing but its twin"),
    n("concept:twin", "Island twin", "concept"),
    n("concept:loner", "Loner", "concept"),
    n("entity:dup1", "Duplicate", "entity"),
    n("entity:dup2", "Duplicate", "entity"),
]
EDGES = [
    e("feature:cache", "benefit:fewer", "enables"),
    e("benefit:fewer", "goal:save", "contributes_to", 0.8),
    e("feature:batch", "goal:save", "optimizes"),
    e("capability:edit", "limitation:text", "has_limitation"),
    e("capability:edit", "feature:exec", "requires"),
    e("workaround:b64", "limitation:text", "fixes"),
    e("capability:teleport", "limitation:physics", "has_limitation"),
    e("tool:reader", "tool:analyzer", "feeds_into"),
    e("tool:analyzer", "tool:writer", "feeds_into"),
    e("tool:writer", "tool:reader", "feeds_into"),  # a cycle: compose must not loop
    e("tool:reader", "step:upload", "requires"),
    e("step:upload", "feature:files", "requires"),
    e("tool:paste", "tool:analyzer", "conflicts_with"),
    e("tool:paste", "tool:reader", "alternative_to"),
    e("tool:analyzer", "feature:exec", "requires"),
    e("concept:island", "concept:twin", "relates_to"),
]


@pytest.fixture(scope="module")
def kg(tmp_path_factory):
    folder = tmp_path_factory.mktemp("methods")
    ws = kgos.Workspace(folder / "home")
    ws.import_file("hand", write_nodelink(folder / "hand.json", NODES, EDGES))
    yield ws.kg("hand")
    ws.close()


def ids(refs) -> list[str]:
    return [r.id if hasattr(r, "id") else r.node.id for r in refs]


# -- method 8 and the language rules -------------------------------------------------------------------
def test_classify_intent_scores_phrases_and_keywords():
    r = classify_intent("How do I reduce my API costs?")
    assert (r.top.category, r.top.score) == ("cost_optimization", 1.3)  # spec/000's own example
    assert r.top.phrases == ("api costs",) and r.top.keywords == ("cost",)
    assert "want_to" in r.routes
    r = classify_intent("explore what's related to caching")
    assert r.top.category == "exploration" and r.top.score == pytest.approx(2.6)  # 2 phrases + 2 keywords
    assert classify_intent("what depends on the auth module").top.category == "impact"


def test_classify_intent_top_three_above_threshold_and_word_boundaries():
    r = classify_intent("compare the code agent workflow pipeline for security and performance")
    assert len(r.intents) == 3 and all(m.score >= 0.3 for m in r.intents)
    assert r.intents[0].score >= r.intents[1].score >= r.intents[2].score
    assert classify_intent("barcode decoding").intents == ()  # "code" inside "barcode" is not the word code
    assert classify_intent("Can it edit binary files?").routes == ("can_it",)
    assert "compose_for" in classify_intent("read CSV data, analyze trends and generate a report").routes
    assert classify_intent("hello", boosts={"exploration": 0.5}).top.category == "exploration"
    with pytest.raises(InvalidArgument):
        classify_intent("   ")


def test_decompose_is_conservative():
    assert decompose("read CSV data, analyze trends and generate a report") == \
        ["read CSV data", "analyze trends", "generate a report"]
    assert decompose("read CSV and Excel files") == ["read CSV and Excel files"]
    assert decompose("generate a report after analyzing trends") == ["analyzing trends", "generate a report"]
    assert decompose("I want to load data then chart it") == ["load data", "chart it"]
    assert goal_keywords("I want to reduce my API costs") == (["reduce", "api", "costs"], ["reduce", "costs"])


# -- method 2 ---------------------------------------------------------------------------------------------
def test_want_to_follows_goal_edges(kg):
    r = kg.want_to("I want to save money", k=5)
    assert r.keywords == ("save", "money") and "save" in r.intent_keywords
    found = ids(r.results)
    assert found[0] == "goal:save"
    assert {"feature:batch", "benefit:fewer", "feature:cache"} <= set(found)
    cache = next(h for h in r.results if h.node.id == "feature:cache")
    assert cache.text_score == 0 and cache.graph_score > 0  # reached only through the graph, 2 hops
    assert [(s.node.id, s.edge_type, s.direction) for s in cache.path] == [
        ("feature:cache", None, None), ("benefit:fewer", "enables", "forward"), ("goal:save", "contributes_to", "forward")]
    assert found.index("feature:batch") < found.index("feature:cache")  # 1 hop beats 2 hops
    assert json.loads(json.dumps(r.to_dict()))["results"][0]["node"]["id"] == "goal:save"


def test_want_to_without_matches_and_bad_input(kg):
    assert kg.want_to("juggle flaming torches").results == ()
    assert kg.want_to("I want to").notes  # no content words: says so
    for bad in ("", "   ", None):
        with pytest.raises(InvalidArgument):
            kg.want_to(bad)
    with pytest.raises(InvalidArgument):
        kg.want_to("save money", k=0)


# -- method 3 ---------------------------------------------------------------------------------------------
def test_can_it_statuses(kg):
    r = kg.can_it("Can it edit binary files?")
    assert (r.status, r.node.id, r.capability) == ("yes_with_limitations", "capability:edit", "edit binary files")
    assert [(l.node.id, ids(l.workarounds), l.blocking) for l in r.limitations] == \
        [("limitation:text", ["workaround:b64"], False)]
    assert ids(r.workarounds) == ["workaround:b64"] and ids(r.prerequisites) == ["feature:exec"]
    assert kg.can_it("can it teleport data?").status == "no"
    assert kg.can_it("can it read PDF documents?").status == "yes"
    unknown = kg.can_it("can it fly to the moon?")
    assert (unknown.status, unknown.node) == ("unknown", None)


# -- method 4 ---------------------------------------------------------------------------------------------
def test_compose_for_validates_feeds_into_and_terminates_on_cycles(kg):
    plan = kg.compose_for("read CSV data, analyze trends and generate a report")
    assert plan.sub_goals == ("read CSV data", "analyze trends", "generate a report")
    assert ids(plan.steps) == ["tool:reader", "tool:analyzer", "tool:writer"]
    assert [(x.source, x.target, x.status) for x in plan.edges] == [
        ("tool:reader", "tool:analyzer", "direct"), ("tool:analyzer", "tool:writer", "direct")]
    assert plan.valid and not plan.conflicts
    assert {(p.node.id, p.depth) for p in plan.prerequisites} == {("step:upload", 1), ("feature:files", 2),
                                                                  ("feature:exec", 1)}
    assert any("prerequisite" in w for w in plan.warnings)


def test_compose_for_reversed_conflicts_and_alternatives(kg):
    plan = kg.compose_for("generate a report and then read CSV data")
    assert ids(plan.steps) == ["tool:writer", "tool:reader"]
    assert plan.edges[0].status == "direct"  # the cycle's writer -> reader edge
    plan = kg.compose_for("paste data into the prompt and analyze trends")
    assert ids(plan.steps) == ["tool:paste", "tool:analyzer"]
    assert [(c.source, c.target) for c in plan.conflicts] == [("tool:paste", "tool:analyzer")]
    assert [(a.for_step, a.node.id) for a in plan.alternatives] == [("tool:paste", "tool:reader")]
    assert not plan.valid and any("conflicts_with" in w for w in plan.warnings)
    assert any("no feeds_into" in w for w in plan.warnings)


def test_compose_for_goal_without_verbs_and_max_tools(kg):
    plan = kg.compose_for("CSV trends report")
    assert len(plan.steps) == 1 and any("no action verb" in w for w in plan.warnings)
    plan = kg.compose_for("read CSV data, analyze trends and generate a report", max_tools=2)
    assert len(plan.steps) == 2 and any("max_tools=2" in w for w in plan.warnings)
    with pytest.raises(InvalidArgument):
        kg.compose_for("read CSV data", max_tools=0)


# -- methods 5, 6, 9, 10, 12 ---------------------------------------------------------------------------------
def test_similar_to_formula(kg):
    r = kg.similar_to("tool:reader", k=3)
    top = r.results[0]
    for row in r.results:  # every row is spec/000's formula of its parts
        assert row.score == pytest.approx(0.7 * row.jaccard + 0.2 * row.type_match + 0.1 * row.name_overlap)
    assert top.node.type == "tool" and top.type_match == 1.0
    dup = kg.similar_to("entity:dup1", k=1).results[0]
    assert (dup.node.id, dup.name_overlap, dup.type_match) == ("entity:dup2", 1.0, 1.0)


def test_impact_analysis_levels_and_risk(kg):
    r = kg.impact_analysis("goal:save", direction="backward", max_depth=3)
    assert r.counts_by_depth == {1: 2, 2: 1} and r.total_impacted == 3
    assert {x.node.id for x in r.risk_by_depth[1]} == {"benefit:fewer", "feature:batch"}
    view = view_of(kg)
    crit = criticality(view)
    fewer = next(x for x in r.risk_by_depth[1] if x.node.id == "benefit:fewer")
    assert fewer.risk == pytest.approx(1.0 * 0.8 * crit[view.row("benefit:fewer")])
    cache = r.risk_by_depth[2][0]
    assert (cache.node.id, cache.parent, cache.edge_type, cache.direction) == \
        ("feature:cache", "benefit:fewer", "enables", "backward")
    assert cache.risk == pytest.approx(0.5 * crit[view.row("feature:cache")])
    assert ids(r.critical_path) == ["goal:save", "benefit:fewer", "feature:cache"]
    assert r.edge_types_traversed == {"contributes_to": 1, "enables": 1, "optimizes": 1}
    assert kg.impact_analysis("goal:save", direction="forward").total_impacted == 0


def test_impact_analysis_bad_input_and_caps(kg):
    with pytest.raises(InvalidArgument, match="forward, backward, both"):
        kg.impact_analysis("goal:save", direction="sideways")
    for depth in (0, -1, 1.5, True):
        with pytest.raises(InvalidArgument):
            kg.impact_analysis("goal:save", max_depth=depth)
    capped = kg.impact_analysis("goal:save", max_depth=10_000)
    assert capped.max_depth == 10 and "capped" in capped.notes[0]
    with pytest.raises(NodeNotFound) as err:
        kg.impact_analysis("goal:sav")
    assert "goal:save" in err.value.suggestions


def test_trace_path(kg):
    r = kg.trace_path("feature:cache", "goal:save")
    assert (r.found, r.length) == (True, 2)
    assert [(s.node.id, s.edge_type, s.direction) for s in r.path] == [
        ("feature:cache", None, None), ("benefit:fewer", "enables", "forward"), ("goal:save", "contributes_to", "forward")]
    back = kg.trace_path("goal:save", "feature:cache")
    assert [(s.edge_type, s.direction) for s in back.path[1:]] == [("contributes_to", "backward"), ("enables", "backward")]
    d = r.to_dict()
    assert d["path"][1] == {"edge": "enables", "direction": "forward"} and d["length"] == 2
    assert kg.trace_path("feature:cache", "feature:cache").length == 0


def test_trace_path_disconnected_and_too_deep(kg):
    r = kg.trace_path("concept:island", "goal:save")
    assert (r.found, r.length, r.path) == (False, None, ())
    assert kg.trace_path("feature:cache", "goal:save", max_depth=1).found is False
    assert kg.trace_path("feature:cache", "goal:save", max_depth=99).notes  # capped, and says so


def test_explore_smart_ranks_levels_and_marks_hubs(kg):
    r = kg.explore_smart("tool:analyzer", depth=2)
    assert [lv.count for lv in r.levels] == [1, 4, 2]
    level1 = r.levels[1]
    assert {x.node.id for x in level1.nodes} == {"tool:reader", "tool:writer", "tool:paste", "feature:exec"}
    scores = [x.rank_score for x in level1.nodes]
    assert scores == sorted(scores, reverse=True)
    reader = next(x for x in level1.nodes if x.node.id == "tool:reader")
    assert reader.edge_diversity == 3 and reader.degree == 4  # feeds_into, requires, alternative_to
    assert level1.nodes[0].node.id == "tool:reader"  # highest degree and diversity
    assert all(x.is_hub == (x.degree > 2 * lv.mean_degree) for lv in r.levels[1:] for x in lv.nodes)


def test_edge_type_boost(kg):
    r = kg.edge_type_boost(["goal:save"], boost_types=["optimizes", "contributes_to"])
    assert r.as_dict() == {"feature:batch": 1.0, "benefit:fewer": 1.0}  # both +0.3 incoming, normalised
    r = kg.edge_type_boost("benefit:fewer")
    assert r.as_dict() == {"goal:save": 1.0, "feature:cache": pytest.approx(0.6)}  # +0.5 out, +0.3 in
    assert kg.edge_type_boost("benefit:fewer", boost_types=["nope"]).scores == ()
    with pytest.raises(InvalidArgument):
        kg.edge_type_boost([])


def test_keyword_match(kg):
    r = kg.keyword_match("csv reader tool")
    assert r.terms == ("csv", "reader", "tool")
    assert (r.results[0].node.id, r.results[0].score) == ("tool:reader", 3)
    assert kg.keyword_match("100%_off").results == ()  # LIKE wildcards are escaped


# -- method 1 -----------------------------------------------------------------------------------------------
def test_intent_search_routes_and_merges(kg):
    r = kg.intent_search("Can it edit binary files?")
    assert r.routes == ("can_it",) and r.capability.status == "yes_with_limitations"
    assert r.nodes[0].node.id == "capability:edit" and r.nodes[0].method_scores == {"can_it": 1.0}
    assert "workaround:b64" in ids(r.nodes)
    assert r.edges and all(x.source == "capability:edit" or x.target == "capability:edit" for x in r.edges[:2])
    plan = kg.intent_search("read CSV data, analyze trends and generate a report").composition
    assert ids(plan.steps) == ["tool:reader", "tool:analyzer", "tool:writer"]
    d = json.loads(json.dumps(r.to_dict()))
    assert d["nodes"][0]["rank"] == 1 and d["capability"]["status"] == "yes_with_limitations"


def test_intent_search_config(kg):
    r = kg.intent_search("save money", RetrievalConfig(k=3, methods=("want_to",)))
    assert r.routes == ("want_to",) and len(r.nodes) <= 3
    only_cheap = kg.intent_search("save money", {"dimension_filters": {"pricing_tier": {"max": 0.3}}})
    assert only_cheap.nodes == ()  # no node of this KG has a pricing_tier
    with pytest.raises(InvalidArgument):
        kg.intent_search("save money", {"kk": 3})
    with pytest.raises(InvalidArgument):
        kg.intent_search("save money", {"methods": ["teleport"]})


# -- node references -------------------------------------------------------------------------------------------
def test_node_references(kg):
    assert kg.similar_to("Response cache").node.id == "feature:cache"  # by name
    assert kg.similar_to("cache").node.id == "feature:cache"  # by the id's slug
    with pytest.raises(AmbiguousNode) as err:
        kg.similar_to("Duplicate")
    assert err.value.candidates == ["entity:dup1", "entity:dup2"]
    with pytest.raises(NodeNotFound):
        kg.trace_path("feature:cache", "no such node at all")


def test_results_are_frozen(kg):
    r = kg.trace_path("feature:cache", "goal:save")
    with pytest.raises(AttributeError):
        r.found = False  # type: ignore[misc]
    assert np.isfinite(json.loads(json.dumps(kg.impact_analysis("goal:save").to_dict()))["total_impacted"])


@pytest.mark.parametrize("module", ["language", "intent", "catalog", "dimensions"])
def test_docstring_examples(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(f"kgos.methods.{module}"))
    assert result.attempted > 0 and result.failed == 0
