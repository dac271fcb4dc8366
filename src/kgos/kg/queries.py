"""``kg.methods``: the query methods of spec/000 section 6 on one KG.

Each call checks its arguments, resolves node references (an id or an unambiguous name) and runs the
function of ``kgos.methods`` on the KG's current view and snapshot. ``KG`` keeps same-named methods
that call these (``kg.want_to(...)`` is ``kg.methods.want_to(...)``); the surfaces (CLI, HTTP, MCP,
expert tools) reach them through the catalogue, ``kgos.kg.catalogue``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument
from ..methods import capability as capabilities
from ..methods import compose, dimensions, keyword, orchestrator, pushdown, structure
from ..methods import goal as goals
from ..methods.intent import classify_intent
from ..methods.orchestrator import RetrievalConfig
from ..methods.pushdown import pushdown_of
from ..methods.results import (
    AlternativesResult,
    BlockerReport,
    BoostResult,
    CapabilityResult,
    CompositionPlan,
    DimensionFilterResult,
    ExplorationTree,
    ImpactResult,
    IntentClassification,
    IntentSearchResult,
    KeywordMatchResult,
    NodeRef,
    PathResult,
    SimilarResult,
    WantToResult,
)
from ..methods.view import PER_LEVEL_DEFAULT, check_depth, check_direction, check_k, check_text, resolve

if TYPE_CHECKING:
    from .facade import KG


class QueryMethods:
    """The twelve query methods of one KG, plus ``why_not`` and ``alternatives``."""

    def __init__(self, kg: KG) -> None:
        self.kg = kg

    def _ref(self, node: str) -> NodeRef:
        return resolve(self.kg.store, node)

    def intent_search(self, query: str, config: RetrievalConfig | Mapping[str, Any] | None = None) -> IntentSearchResult:
        """Classify, route to the query methods, merge with hybrid search (method 1)."""
        return orchestrator.intent_search(self.kg, check_text(query, "query"), config)

    def want_to(self, goal: str, k: int = 10) -> WantToResult:
        """Nodes that serve a goal: keywords (intent verbs x5), then goal edges (method 2)."""
        return goals.want_to(*self.kg.view_and_snapshot(), self.kg.store, check_text(goal, "goal"), check_k(k))

    def can_it(self, capability: str) -> CapabilityResult:
        """yes / yes_with_limitations / no / unknown, with limitations and workarounds (method 3)."""
        return capabilities.can_it(*self.kg.view_and_snapshot(), self.kg.store, check_text(capability, "capability"))

    def compose_for(self, goal: str, max_tools: int = 5) -> CompositionPlan:
        """A plan of steps validated by feeds_into / requires / conflicts_with edges (method 4)."""
        return compose.compose(*self.kg.view_and_snapshot(), self.kg.store, check_text(goal, "goal"),
                               check_k(max_tools, "max_tools", compose.MAX_TOOLS_CAP))

    def why_not(self, node: str) -> BlockerReport:
        """What blocks a node: limitations, prerequisites that are blocked, conflicts."""
        view = self.kg.view()
        return capabilities.why_not(view, self.kg.store, view.row(self._ref(node).id))

    def similar_to(self, node: str, k: int = 10) -> SimilarResult:
        """0.70 Jaccard + 0.20 type match + 0.10 name overlap against all nodes (method 5)."""
        view, ref = self.kg.view(), self._ref(node)
        return SimilarResult(ref, structure.similar_rows(view, view.row(ref.id), check_k(k)))

    def alternatives(self, node: str, k: int = 10) -> AlternativesResult:
        """Declared alternatives (alternative_to / similar_to edges) then structural twins."""
        view = self.kg.view()
        return structure.alternatives(view, view.row(self._ref(node).id), check_k(k))

    def impact_analysis(self, node: str, direction: str = "both", max_depth: int = 3,
                        per_depth: int = PER_LEVEL_DEFAULT) -> ImpactResult:
        """BFS forward / backward / both with risk = 1/depth x weight x criticality (method 6)."""
        direction = check_direction(direction)
        depth, notes = check_depth(max_depth)
        pd = pushdown_of(self.kg)
        if pd is not None:  # in the database: no whole-KG snapshot (docs/postgres.md "Pushdown")
            return pushdown.impact(pd, self._ref(node), direction, depth, check_k(per_depth, "per_depth"), notes)
        view = self.kg.view()
        return structure.impact(view, view.row(self._ref(node).id), direction, depth,
                                check_k(per_depth, "per_depth"), notes)

    def trace_path(self, node_a: str, node_b: str, max_depth: int = 5) -> PathResult:
        """Shortest path with each edge's type and direction; found False when none (method 9)."""
        depth, notes = check_depth(max_depth)
        pd = pushdown_of(self.kg)
        if pd is not None:
            return pushdown.trace(pd, self._ref(node_a), self._ref(node_b), depth, notes)
        view = self.kg.view()
        a, b = self._ref(node_a), self._ref(node_b)
        return structure.trace(view, view.row(a.id), view.row(b.id), depth, notes)

    def explore_smart(self, node: str, depth: int = 2, per_level: int = PER_LEVEL_DEFAULT) -> ExplorationTree:
        """BFS levels ranked by degree centrality and edge diversity, hubs marked (method 10)."""
        d, notes = check_depth(depth, "depth")
        view = self.kg.view()
        return structure.explore(view, view.row(self._ref(node).id), d, check_k(per_level, "per_level"), notes)

    def edge_type_boost(self, seeds: Iterable[str] | str, boost_types: Iterable[str] | None = None,
                        limit: int = 50) -> BoostResult:
        """+0.5 out / +0.3 in over ``boost_types`` from the seeds, normalised (method 12)."""
        view = self.kg.view()
        refs = [self._ref(s) for s in ([seeds] if isinstance(seeds, str) else list(seeds))]
        if not refs:
            raise InvalidArgument("give at least one seed node")
        types = [boost_types] if isinstance(boost_types, str) else boost_types
        return structure.boost(view, [view.row(r.id) for r in refs], types, check_k(limit, "limit"))

    def dimension_filter(self, filters: Mapping[str, Any], limit: int = 20) -> DimensionFilterResult:
        """Nodes meeting {dimension: {min, max, exact, gt, lt}} constraints, in SQL (method 7)."""
        return dimensions.dimension_filter(self.kg.store, filters, limit)

    def classify_intent(self, query: str) -> IntentClassification:
        """The 14 KG-OS categories, top 3 scoring >= 0.3 (method 8); needs no graph."""
        return classify_intent(query)

    def keyword_match(self, query: str, limit: int = 20) -> KeywordMatchResult:
        """SQL LIKE of the query's terms on name, type and properties (method 11)."""
        return keyword.keyword_match(self.kg.store, check_text(query, "query"), check_k(limit, "limit"))
