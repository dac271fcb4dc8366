"""Method 8, ``classify_intent``: the 14 KG-OS intent categories of spec/000 section 6 and how
``intent_search`` routes a query to the other methods.

Scoring (spec/000 method 8): lower-case the query; +1.0 for each trigger phrase it contains, +0.3
for each trigger keyword it contains as a word (simple inflections count: "costs" matches "cost",
"optimized" matches "optimize", as the spec's own example needs to reach 1.3); an optional mode boost
per category; the top 3 with a score of at least 0.3 (one keyword) win.

>>> [(m.category, m.score) for m in classify_intent("How do I reduce my API costs?").intents]
[('cost_optimization', 1.3)]
>>> classify_intent("what depends on the auth module?").top.category
'impact'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from ..retrieval.intents import classify as classify_retrieval
from .language import decompose, has_action_verb
from .results import IntentClassification, IntentMatch

PHRASE_SCORE = 1.0
KEYWORD_SCORE = 0.3
THRESHOLD = 0.3
TOP = 3

# The method-8 table of spec/000: category -> (trigger phrases, trigger keywords).
CATEGORIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cost_optimization": (("reduce costs", "save money", "api costs"), ("cost", "expensive", "cheap", "budget", "pricing")),
    "coding_help": (("write code", "fix bug", "refactor"), ("code", "function", "class", "bug", "error", "debug")),
    "knowledge_graph": (("knowledge graph", "entity extraction"), ("knowledge", "graph", "nodes", "edges", "entity")),
    "agent_workflow": (("build agent", "autonomous workflow"), ("agent", "workflow", "pipeline", "automate")),
    "prompt_engineering": (("system prompt", "few-shot"), ("prompt", "instruction", "persona", "template")),
    "deployment": (("deploy to production", "docker"), ("deploy", "production", "docker", "server", "monitor")),
    "embedding_search": (("semantic search", "vector search"), ("embedding", "search", "semantic", "vector", "similarity")),
    "reasoning": (("extended thinking", "chain of thought"), ("think", "reason", "analyze", "evaluate", "compare")),
    "security": (("security audit", "vulnerability scan"), ("security", "vulnerability", "auth", "encrypt")),
    "performance": (("optimize performance", "reduce latency"), ("performance", "optimize", "fast", "latency", "cache")),
    "composition": (("combine tools", "multi-step workflow"), ("compose", "combine", "chain", "pipeline", "workflow")),
    "impact": (("what depends on", "change impact"), ("impact", "depends", "dependency", "affect", "break")),
    "comparison": (("compare options", "alternatives"), ("compare", "alternative", "versus", "better", "which")),
    "exploration": (("explore", "what's related", "show me"), ("explore", "related", "around", "nearby", "connected")),
}
CATEGORY_NAMES = tuple(CATEGORIES)

# Which query method each of the 14 categories calls for (spec/000 method 1, step 2); every category
# routes (docs/methods.md "Routing table"; tests/test_routing.py has a query per category).
CATEGORY_ROUTES: dict[str, str] = {
    "cost_optimization": "want_to", "performance": "want_to", "security": "want_to",
    "agent_workflow": "want_to", "composition": "compose_for", "impact": "impact_analysis",
    "comparison": "similar_to", "exploration": "explore_smart",
    # how-to questions about a topic: goals to reach
    "prompt_engineering": "want_to", "deployment": "want_to",
    # a bug or an error: what blocks the node (limitations, their workarounds, blocked prerequisites)
    "coding_help": "why_not",
    # the graph around the node the query names
    "knowledge_graph": "explore_smart",
    # "find things like X by meaning": structural twins complement the embedding signal
    "embedding_search": "similar_to",
    # weighing options: declared alternatives, structural twins and conflicts
    "reasoning": "alternatives",
}
# The retrieval intents of spec/001 1.3 that also route: capability questions and stated goals.
RETRIEVAL_ROUTES: dict[str, str] = {"capability_check": "can_it", "goal_based": "want_to"}
ROUTE_ORDER = ("can_it", "compose_for", "want_to", "impact_analysis", "similar_to", "alternatives", "why_not",
               "explore_smart")


@lru_cache(maxsize=64)
def _keyword_re(keyword: str) -> re.Pattern[str]:
    """Whole word, with simple inflections: cost(s), optimize(d|s), think(ing), depends."""
    stem = keyword.removesuffix("e")
    return re.compile(rf"\b(?:{re.escape(keyword)}(?:s|es)?|{re.escape(stem)}(?:ed|ing|es|ied))\b")


def _normalise(query: str) -> str:
    return query.lower().replace("\u2019", "'").replace("\u2018", "'")


def score_categories(query: str, boosts: Mapping[str, float] | None = None) -> list[IntentMatch]:
    """Every category with a positive score, best first (ties in table order)."""
    text = _normalise(query)
    found = []
    for category, (phrases, keywords) in CATEGORIES.items():
        hit_phrases = tuple(p for p in phrases if p in text)
        hit_keywords = tuple(k for k in keywords if _keyword_re(k).search(text))
        score = PHRASE_SCORE * len(hit_phrases) + KEYWORD_SCORE * len(hit_keywords)
        score += float((boosts or {}).get(category, 0.0))
        if score > 0:
            found.append(IntentMatch(category, round(score, 6), hit_phrases, hit_keywords))
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return sorted(found, key=lambda m: (-m.score, order[m.category]))


def classify_intent(query: str, boosts: Mapping[str, float] | None = None) -> IntentClassification:
    """spec/000 method 8: the top 3 categories scoring >= 0.3, plus the routes ``intent_search``
    would take. ``boosts``: the spec's optional mode boost, category -> added score."""
    if not isinstance(query, str) or not query.strip():
        from ..errors import InvalidArgument
        raise InvalidArgument("the query is empty: give some words to classify")
    intents = tuple(m for m in score_categories(query, boosts) if m.score >= THRESHOLD - 1e-9)[:TOP]
    retrieval = classify_retrieval(query.strip())
    return IntentClassification(query.strip(), intents, retrieval.name, routes(query, intents, retrieval))


def routes(query: str, intents: tuple[IntentMatch, ...], retrieval: object) -> tuple[str, ...]:
    """The methods a query calls for: from its leading categories (the top score, and any category
    a phrase triggered), its retrieval intent (capability questions, stated goals), and a detected
    composition (two or more clauses led by action verbs)."""
    top = intents[0].score if intents else 0.0
    leading = [m for m in intents if m.score >= top - 1e-9 or m.score >= PHRASE_SCORE]
    chosen = {CATEGORY_ROUTES[m.category] for m in leading if m.category in CATEGORY_ROUTES}
    name, source = getattr(retrieval, "name", ""), getattr(retrieval, "source", "")
    if name in RETRIEVAL_ROUTES and source != "default":
        chosen.add(RETRIEVAL_ROUTES[name])
    if is_composition(query):
        chosen.add("compose_for")
    if "can_it" in chosen:
        chosen.discard("want_to")  # a capability question is not a goal to reach
    return tuple(r for r in ROUTE_ORDER if r in chosen)


def is_composition(query: str) -> bool:
    """A multi-step goal: at least two sub-goals, each led by an action verb."""
    parts = decompose(query)
    return len(parts) >= 2 and all(has_action_verb(p) for p in parts)
