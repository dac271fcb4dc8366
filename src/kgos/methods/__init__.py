"""Methods layer: the twelve KG-OS query methods (spec/000 section 6), dimensions and analytics.

``QueryMethods`` is mixed into ``kgos.KG`` so every method is available as ``kg.want_to(...)``.
Node arguments take an id or an unambiguous name (also the id's slug, e.g. ``prompt_caching``);
results are frozen dataclasses with ``to_dict()`` (``kgos.methods.results``).

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

from collections.abc import Iterable, Mapping
from typing import Any

from .catalog import CATALOG, CATEGORIES, DIMENSIONS, Dimension
from .intent import CATEGORY_NAMES, classify_intent
from .orchestrator import RetrievalConfig
from .results import (
    AlternativesResult,
    AutoDimensionsReport,
    BlockerReport,
    BoostResult,
    CapabilityResult,
    CentralityReport,
    CommunityReport,
    CompositionPlan,
    DimensionFilterResult,
    ExplicitAlternative,
    ExplorationTree,
    GapReport,
    ImpactResult,
    IntentClassification,
    IntentSearchResult,
    KeywordMatchResult,
    NodeDimensions,
    PathResult,
    SimilarResult,
    WantToResult,
)
from .view import PER_LEVEL_DEFAULT, check_depth, check_direction, check_k, check_text, resolve, view_of


class QueryMethods:
    """Query methods of a KG; implemented in the modules of this package (see the table above)."""

    # -- method 1 ---------------------------------------------------------------------------------
    def intent_search(self, query: str, config: RetrievalConfig | Mapping[str, Any] | None = None) -> IntentSearchResult:
        """Classify, route to the query methods, merge with hybrid search (spec/000 method 1)."""
        from .orchestrator import intent_search
        return intent_search(self, check_text(query, "query"), config)  # type: ignore[arg-type]

    # -- methods 2, 3, 4 ----------------------------------------------------------------------------
    def want_to(self, goal: str, k: int = 10) -> WantToResult:
        """Nodes that serve a goal: keywords (intent verbs x5), then goal edges (method 2)."""
        from .goal import want_to
        return want_to(view_of(self), self.engine.snapshot(), self.store, check_text(goal, "goal"), check_k(k))  # type: ignore[attr-defined,arg-type]

    def can_it(self, capability: str) -> CapabilityResult:
        """yes / yes_with_limitations / no / unknown, with limitations and workarounds (method 3)."""
        from .capability import can_it
        return can_it(view_of(self), self.engine.snapshot(), self.store, check_text(capability, "capability"))  # type: ignore[attr-defined,arg-type]

    def compose_for(self, goal: str, max_tools: int = 5) -> CompositionPlan:
        """A plan of steps validated by feeds_into / requires / conflicts_with edges (method 4)."""
        from .compose import MAX_TOOLS_CAP, compose
        return compose(view_of(self), self.engine.snapshot(), self.store, check_text(goal, "goal"),  # type: ignore[attr-defined,arg-type]
                       check_k(max_tools, "max_tools", MAX_TOOLS_CAP))

    def why_not(self, node: str) -> BlockerReport:
        """What blocks a node: limitations, prerequisites that are blocked, conflicts."""
        from .capability import why_not
        view = view_of(self)  # type: ignore[arg-type]
        return why_not(view, self.store, view.row(resolve(self, node).id))  # type: ignore[attr-defined,arg-type]

    # -- methods 5, 6, 9, 10, 12 ----------------------------------------------------------------------
    def similar_to(self, node: str, k: int = 10) -> SimilarResult:
        """0.70 Jaccard + 0.20 type match + 0.10 name overlap against all nodes (method 5)."""
        from .structure import similar_rows
        view = view_of(self)  # type: ignore[arg-type]
        ref = resolve(self, node)  # type: ignore[arg-type]
        return SimilarResult(ref, similar_rows(view, view.row(ref.id), check_k(k)))

    def alternatives(self, node: str, k: int = 10) -> AlternativesResult:
        """Declared alternatives (alternative_to / similar_to edges) then structural twins."""
        from .structure import alternatives
        view = view_of(self)  # type: ignore[arg-type]
        return alternatives(view, view.row(resolve(self, node).id), check_k(k))  # type: ignore[arg-type]

    def impact_analysis(self, node: str, direction: str = "both", max_depth: int = 3,
                        per_depth: int = PER_LEVEL_DEFAULT) -> ImpactResult:
        """BFS forward / backward / both with risk = 1/depth x weight x criticality (method 6)."""
        from .structure import impact
        direction = check_direction(direction)
        depth, notes = check_depth(max_depth)
        view = view_of(self)  # type: ignore[arg-type]
        return impact(view, view.row(resolve(self, node).id), direction, depth, check_k(per_depth, "per_depth"), notes)  # type: ignore[arg-type]

    def trace_path(self, node_a: str, node_b: str, max_depth: int = 5) -> PathResult:
        """Shortest path with each edge's type and direction; found False when none (method 9)."""
        from .structure import trace
        depth, notes = check_depth(max_depth)
        view = view_of(self)  # type: ignore[arg-type]
        a, b = resolve(self, node_a), resolve(self, node_b)  # type: ignore[arg-type]
        return trace(view, view.row(a.id), view.row(b.id), depth, notes)

    def explore_smart(self, node: str, depth: int = 2, per_level: int = PER_LEVEL_DEFAULT) -> ExplorationTree:
        """BFS levels ranked by degree centrality and edge diversity, hubs marked (method 10)."""
        from .structure import explore
        d, notes = check_depth(depth, "depth")
        view = view_of(self)  # type: ignore[arg-type]
        return explore(view, view.row(resolve(self, node).id), d, check_k(per_level, "per_level"), notes)  # type: ignore[arg-type]

    def edge_type_boost(self, seeds: Iterable[str] | str, boost_types: Iterable[str] | None = None,
                        limit: int = 50) -> BoostResult:
        """+0.5 out / +0.3 in over ``boost_types`` from the seeds, normalised (method 12)."""
        from .structure import boost
        view = view_of(self)  # type: ignore[arg-type]
        refs = [resolve(self, s) for s in ([seeds] if isinstance(seeds, str) else list(seeds))]  # type: ignore[arg-type]
        if not refs:
            from ..errors import InvalidArgument
            raise InvalidArgument("give at least one seed node")
        types = [boost_types] if isinstance(boost_types, str) else boost_types
        return boost(view, [view.row(r.id) for r in refs], types, check_k(limit, "limit"))

    # -- methods 7, 8, 11 ------------------------------------------------------------------------------
    def dimension_filter(self, filters: Mapping[str, Any], limit: int = 20) -> DimensionFilterResult:
        """Nodes meeting {dimension: {min, max, exact, gt, lt}} constraints, in SQL (method 7)."""
        from .dimensions import dimension_filter
        return dimension_filter(self.store, filters, limit)  # type: ignore[attr-defined]

    def classify_intent(self, query: str) -> IntentClassification:
        """The 14 KG-OS categories, top 3 scoring >= 0.3 (method 8); needs no graph."""
        return classify_intent(query)

    def keyword_match(self, query: str, limit: int = 20) -> KeywordMatchResult:
        """SQL LIKE of the query's terms on name, type and properties (method 11)."""
        from .keyword import keyword_match
        return keyword_match(self.store, check_text(query, "query"), check_k(limit, "limit"))  # type: ignore[attr-defined]

    # -- semantic dimensions ----------------------------------------------------------------------------
    def dimensions(self, node: str) -> NodeDimensions:
        """A node's dimension values (catalog and custom), each marked when it was inferred."""
        from .dimensions import node_dimensions
        return node_dimensions(self.node(resolve(self, node).id))  # type: ignore[attr-defined,arg-type]

    def set_dimensions(self, node: str, values: Mapping[str, Any], custom: bool = False) -> NodeDimensions:
        """Set dimension values (0..1); names outside the catalog need ``custom=True``."""
        from .dimensions import set_dimensions
        return set_dimensions(self, resolve(self, node).id, values, custom)  # type: ignore[arg-type]

    def infer_dimensions(self, dims: Iterable[str] | None = None, dry_run: bool = False) -> AutoDimensionsReport:
        """The roadmap's automatic extraction; never overwrites a value a person set."""
        from .autodims import infer
        return infer(self, dims, dry_run)  # type: ignore[arg-type]

    # -- analytics ------------------------------------------------------------------------------------
    def centrality(self, metric: str = "combined", k: int = 20) -> CentralityReport:
        """Critical components: top k by degree, betweenness, pagerank or combined."""
        from .analytics import centrality
        return centrality(view_of(self), metric, check_k(k))  # type: ignore[arg-type]

    def bottlenecks(self, k: int = 20) -> CentralityReport:
        """Articulation points ranked by betweenness."""
        from .analytics import bottlenecks
        return bottlenecks(view_of(self), check_k(k))  # type: ignore[arg-type]

    def communities(self, k: int = 20) -> CommunityReport:
        """Communities (Leiden), largest first, with top members and node types."""
        from .analytics import communities
        return communities(view_of(self), check_k(k))  # type: ignore[arg-type]

    def gaps(self, limit: int = 20) -> GapReport:
        """Orphans, cut-off components, unmitigated limitations, nodes without dimensions."""
        from .analytics import gaps
        return gaps(view_of(self), self.store, check_k(limit, "limit"))  # type: ignore[attr-defined,arg-type]


__all__ = [
    "CATALOG",
    "CATEGORIES",
    "CATEGORY_NAMES",
    "DIMENSIONS",
    "Dimension",
    "ExplicitAlternative",
    "QueryMethods",
    "RetrievalConfig",
    "classify_intent",
]
