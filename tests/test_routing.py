"""Every one of spec/000's 14 intent categories routes to the query method that serves it: one query per
category is classified into it, routed, and ``intent_search`` on the demo KG runs the method (its
scores reach the merged hits)."""

from __future__ import annotations

import pytest

import kgos
from kgos.data import load_demo
from kgos.kg.catalogue import BY_NAME
from kgos.methods.intent import CATEGORIES, CATEGORY_ROUTES, classify_intent

# category -> (a query of that category, the method it routes to)
CASES: dict[str, tuple[str, str]] = {
    "cost_optimization": ("how do I reduce costs of my API calls", "want_to"),
    "coding_help": ("fix bug in the streaming code", "why_not"),
    "knowledge_graph": ("entity extraction into a knowledge graph", "explore_smart"),
    "agent_workflow": ("build agent that runs an autonomous workflow", "want_to"),
    "prompt_engineering": ("write a system prompt with few-shot examples", "want_to"),
    "deployment": ("deploy to production with docker", "want_to"),
    "embedding_search": ("semantic search over my documents", "similar_to"),
    "reasoning": ("extended thinking for hard problems", "alternatives"),
    "security": ("security audit of my API keys", "want_to"),
    "performance": ("reduce latency of responses", "want_to"),
    "composition": ("combine tools into a multi-step workflow", "compose_for"),
    "impact": ("what depends on api key authentication", "impact_analysis"),
    "comparison": ("alternatives to streaming", "similar_to"),
    "exploration": ("explore prompt caching", "explore_smart"),
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> kgos.KG:
    ws = kgos.Workspace(tmp_path_factory.mktemp("routing") / "home")
    load_demo(ws, embedder=None)
    yield ws.kg("demo")
    ws.close()


def test_every_category_has_a_route_and_a_case() -> None:
    assert set(CATEGORY_ROUTES) == set(CATEGORIES) == set(CASES)
    assert all(route in BY_NAME for route in CATEGORY_ROUTES.values())


@pytest.mark.parametrize("category", list(CASES))
def test_each_category_routes_to_its_method(demo: kgos.KG, category: str) -> None:
    query, method = CASES[category]
    classified = classify_intent(query)
    assert classified.top is not None and classified.top.category == category
    assert method in classified.routes and category in BY_NAME[method].intents
    result = demo.intent_search(query)
    assert method in result.routes
    assert any(method in hit.method_scores for hit in result.nodes), (result.notes, result.routes)


def test_the_new_routes_carry_their_sub_results(demo: kgos.KG) -> None:
    debug = demo.intent_search("fix bug in the streaming code")
    assert debug.blockers is not None and debug.to_dict()["blockers"]["node"]["id"]
    reasoning = demo.intent_search("extended thinking for hard problems")
    assert reasoning.alternatives is not None and reasoning.to_dict()["alternatives"]["node"]["id"]
