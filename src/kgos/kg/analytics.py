"""``kg.analytics``: the Flags Toolkit's graph analytics on one KG (spec/000 section 4): critical
components, bottlenecks, communities and gaps, each on the KG's current view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..methods import analytics
from ..methods.results import CentralityReport, CommunityReport, GapReport
from ..methods.view import check_k

if TYPE_CHECKING:
    from .facade import KG


class Analytics:
    def __init__(self, kg: KG) -> None:
        self.kg = kg

    def centrality(self, metric: str = "combined", k: int = 20) -> CentralityReport:
        """Critical components: top k by degree, betweenness, pagerank or combined."""
        return analytics.centrality(self.kg.view(), metric, check_k(k))

    def bottlenecks(self, k: int = 20) -> CentralityReport:
        """Articulation points ranked by betweenness."""
        return analytics.bottlenecks(self.kg.view(), check_k(k))

    def communities(self, k: int = 20) -> CommunityReport:
        """Communities (Leiden), largest first, with top members and node types."""
        return analytics.communities(self.kg.view(), check_k(k))

    def gaps(self, limit: int = 20) -> GapReport:
        """Orphans, cut-off components, unmitigated limitations, nodes without dimensions."""
        return analytics.gaps(self.kg.view(), self.kg.store, check_k(limit, "limit"))
