"""Methods layer: the twelve KG-OS query methods (spec/000 section 6), dimensions and analytics.

Each method is a function over what it reads (a ``GraphView``, the snapshot, the store, or for the
few that search or write a ``KGSource``); the ``kgos.KG`` facade (``kgos.kg``) calls them, so every
method is available as ``kg.want_to(...)`` while this layer never imports the facade. Node arguments
take an id or an unambiguous name (also the id's slug, e.g. ``prompt_caching``); results are
frozen dataclasses with ``to_dict()`` (``kgos.methods.results``).

| # | method (spec/000 6)       | here                                   | module        |
|---|---------------------------|----------------------------------------|---------------|
| 1 | intent_search             | ``kg.intent_search(query, config)``    | orchestrator  |
| 2 | want_to                   | ``kg.want_to(goal, k)``                | goal          |
| 3 | can_it                    | ``kg.can_it(capability)``              | capability    |
| 4 | compose_for               | ``kg.compose_for(goal, max_tools)``    | compose       |
| 5 | similar_to                | ``kg.similar_to(node, k)``             | structure     |
| 6 | impact_analysis           | ``kg.impact_analysis(node, ...)``      | structure     |
| 7 | dimension_filter          | ``kg.dimension_filter(filters, limit)``| dimensions    |
| 8 | classify_intent           | ``classify_intent(query)``             | intent        |
| 9 | trace_path                | ``kg.trace_path(a, b, max_depth)``     | structure     |
| 10| explore_smart             | ``kg.explore_smart(node, depth)``      | structure     |
| 11| _keyword_match_nodes      | ``kg.keyword_match(query)``            | keyword       |
| 12| _edge_type_boost          | ``kg.edge_type_boost(seeds, types)``   | structure     |
"""

from __future__ import annotations

from .catalog import CATALOG, CATEGORIES, DIMENSIONS, Dimension
from .intent import CATEGORY_NAMES, classify_intent
from .orchestrator import RetrievalConfig
from .results import ExplicitAlternative
from .source import KGSource

__all__ = [
    "CATALOG",
    "CATEGORIES",
    "CATEGORY_NAMES",
    "DIMENSIONS",
    "Dimension",
    "ExplicitAlternative",
    "KGSource",
    "RetrievalConfig",
    "classify_intent",
]
