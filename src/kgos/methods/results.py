"""What the query methods return: small frozen records whose ``to_dict()`` is their JSON shape.

Every result of spec/000 section 6 has a type here (IntentSearchResult, CapabilityResult,
CompositionPlan, ImpactResult, PathResult, ExplorationTree, ...). ``to_dict()`` converts nested
records, tuples and mappings recursively and rounds floats to 6 places, so the CLI's ``--json`` and
the HTTP API print the same document.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any


def jsonable(value: Any) -> Any:
    """Records -> dicts, tuples -> lists, int keys -> str keys, floats rounded (NaN -> None)."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, 6)
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


class Record:
    """Mixin: ``to_dict()`` of a dataclass, field by field (subclasses may reshape it)."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class NodeRef(Record):
    """A node as results name it: id, name, type (and the description where it helps reading)."""

    id: str
    name: str
    type: str
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "name": self.name, "type": self.type}
        if self.description:
            d["description"] = self.description
        return d


# -- method 8: intent classification ---------------------------------------------------------------
@dataclass(frozen=True)
class IntentMatch(Record):
    """One of the 14 KG-OS categories with its score (+1.0 per phrase, +0.3 per keyword)."""

    category: str
    score: float
    phrases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class IntentClassification(Record):
    """``classify_intent``: the top 3 categories scoring >= 0.3, the retrieval intent of spec/001
    1.3 (which picks weights), and the query methods ``intent_search`` would route to."""

    query: str
    intents: tuple[IntentMatch, ...]
    retrieval_intent: str
    routes: tuple[str, ...]

    @property
    def top(self) -> IntentMatch | None:
        return self.intents[0] if self.intents else None

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["intent"] = self.top.to_dict() if self.top else None
        return d


# -- paths (methods 2, 9) -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PathStep(Record):
    """A node on a path and the edge that led to it from the previous node (None for the first).

    ``direction`` is "forward" when the edge points previous -> this node, "backward" otherwise.
    """

    node: NodeRef
    edge_type: str | None = None
    direction: str | None = None


def path_dict(steps: tuple[PathStep, ...]) -> list[dict[str, Any]]:
    """spec/000 method 9's shape: node, edge, node, edge, ... as alternating dicts."""
    out: list[dict[str, Any]] = []
    for step in steps:
        if step.edge_type is not None:
            out.append({"edge": step.edge_type, "direction": step.direction})
        out.append({"node": step.node.id, "name": step.node.name, "type": step.node.type})
    return out


@dataclass(frozen=True)
class PathResult(Record):
    """``trace_path`` (method 9): ``length`` counts edges; ``found`` False means no path within
    ``max_depth`` (not an error)."""

    source: NodeRef
    target: NodeRef
    found: bool
    length: int | None
    path: tuple[PathStep, ...]
    max_depth: int
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"found": self.found, "length": self.length, "source": self.source.to_dict(),
                "target": self.target.to_dict(), "max_depth": self.max_depth, "path": path_dict(self.path),
                "notes": list(self.notes)}


# -- method 2: want_to ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GoalHit(Record):
    """A node that serves the goal. ``path`` runs from this node to the text match it was reached
    from (a single step when the node matched the goal's words itself)."""

    node: NodeRef
    score: float
    text_score: float
    graph_score: float
    path: tuple[PathStep, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node.to_dict(), "score": jsonable(self.score), "text_score": jsonable(self.text_score),
                "graph_score": jsonable(self.graph_score), "path": path_dict(self.path)}


@dataclass(frozen=True)
class WantToResult(Record):
    goal: str
    keywords: tuple[str, ...]
    intent_keywords: tuple[str, ...]
    results: tuple[GoalHit, ...]
    notes: tuple[str, ...] = ()


# -- method 3: can_it, and why_not ------------------------------------------------------------------------
@dataclass(frozen=True)
class LimitationInfo(Record):
    """A limitation and the workarounds that address it; ``blocking`` when nothing does."""

    node: NodeRef
    workarounds: tuple[NodeRef, ...] = ()
    blocking: bool = False


@dataclass(frozen=True)
class CandidateStatus(Record):
    node: NodeRef
    status: str
    score: float


@dataclass(frozen=True)
class CapabilityResult(Record):
    """``can_it`` (method 3): ``status`` is yes | yes_with_limitations | no | unknown."""

    query: str
    capability: str
    status: str
    node: NodeRef | None
    match_score: float
    limitations: tuple[LimitationInfo, ...] = ()
    workarounds: tuple[NodeRef, ...] = ()
    prerequisites: tuple[NodeRef, ...] = ()
    candidates: tuple[CandidateStatus, ...] = ()
    explanation: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BlockedPrerequisite(Record):
    node: NodeRef
    depth: int
    blocking_limitations: tuple[NodeRef, ...] = ()


@dataclass(frozen=True)
class BlockerReport(Record):
    """``why_not``: what stands in a node's way (limitations, prerequisites, conflicts)."""

    node: NodeRef
    status: str
    limitations: tuple[LimitationInfo, ...]
    workarounds: tuple[NodeRef, ...]
    prerequisites: tuple[BlockedPrerequisite, ...]
    conflicts: tuple[NodeRef, ...]
    alternatives: tuple[NodeRef, ...]
    reasons: tuple[str, ...]


# -- method 4: compose_for -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanStep(Record):
    index: int
    sub_goal: str
    node: NodeRef
    score: float
    candidates: tuple[NodeRef, ...] = ()


@dataclass(frozen=True)
class PlanEdge(Record):
    """The link between consecutive steps. ``status``: direct (a feeds_into edge), via (a feeds_into
    chain through ``via``), reversed (data flows the other way), missing (no feeds_into link)."""

    source: str
    target: str
    type: str
    status: str
    via: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prerequisite(Record):
    node: NodeRef
    needed_by: tuple[str, ...]
    depth: int


@dataclass(frozen=True)
class Alternative(Record):
    for_step: str
    node: NodeRef
    reason: str


@dataclass(frozen=True)
class CompositionPlan(Record):
    """``compose_for`` (method 4): ordered steps, the feeds_into edges validating them, missing
    prerequisites, conflicts, warnings and alternatives. ``valid``: every link is a feeds_into edge
    or chain and no two steps conflict."""

    goal: str
    sub_goals: tuple[str, ...]
    steps: tuple[PlanStep, ...]
    edges: tuple[PlanEdge, ...]
    prerequisites: tuple[Prerequisite, ...]
    conflicts: tuple[PlanEdge, ...]
    warnings: tuple[str, ...]
    alternatives: tuple[Alternative, ...]
    valid: bool
    notes: tuple[str, ...] = ()


# -- method 5: similar_to, and alternatives -----------------------------------------------------------------
@dataclass(frozen=True)
class SimilarRow(Record):
    """score = 0.70 * jaccard + 0.20 * type_match + 0.10 * name_overlap (spec/000 method 5)."""

    node: NodeRef
    score: float
    jaccard: float
    type_match: float
    name_overlap: float


@dataclass(frozen=True)
class SimilarResult(Record):
    node: NodeRef
    results: tuple[SimilarRow, ...]


@dataclass(frozen=True)
class ExplicitAlternative(Record):
    node: NodeRef
    edge_type: str
    direction: str


@dataclass(frozen=True)
class AlternativesResult(Record):
    """Alternatives of a node: explicit (alternative_to / similar_to edges) then structural twins."""

    node: NodeRef
    explicit: tuple[ExplicitAlternative, ...]
    structural: tuple[SimilarRow, ...]
    conflicts: tuple[NodeRef, ...] = ()


# -- method 6: impact_analysis ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImpactedNode(Record):
    """risk = 1/depth x edge weight x criticality (degree centrality / the graph's maximum)."""

    node: NodeRef
    depth: int
    risk: float
    parent: str
    edge_type: str
    direction: str
    weight: float
    criticality: float


@dataclass(frozen=True)
class ImpactResult(Record):
    """``impact_analysis`` (method 6). ``counts_by_depth`` is complete; ``risk_by_depth`` lists the
    riskiest ``per_depth`` nodes of each depth (``truncated`` says whether some were left out)."""

    node: NodeRef
    direction: str
    max_depth: int
    total_impacted: int
    counts_by_depth: dict[int, int]
    risk_by_depth: dict[int, tuple[ImpactedNode, ...]]
    critical_path: tuple[NodeRef, ...]
    edge_types_traversed: dict[str, int]
    truncated: bool = False
    notes: tuple[str, ...] = ()


# -- method 10: explore_smart ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExploredNode(Record):
    """rank_score = 0.6 x degree centrality + 0.4 x edge diversity, each scaled by the level's max."""

    node: NodeRef
    depth: int
    parent: str | None
    edge_type: str | None
    direction: str | None
    degree: int
    degree_centrality: float
    edge_diversity: int
    rank_score: float
    is_hub: bool


@dataclass(frozen=True)
class ExplorationLevel(Record):
    depth: int
    count: int
    mean_degree: float
    nodes: tuple[ExploredNode, ...]


@dataclass(frozen=True)
class ExplorationTree(Record):
    root: NodeRef
    depth: int
    levels: tuple[ExplorationLevel, ...]
    hubs: tuple[NodeRef, ...]
    truncated: bool = False
    notes: tuple[str, ...] = ()


# -- methods 11 and 12 -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KeywordHit(Record):
    node: NodeRef
    score: int
    terms: tuple[str, ...]


@dataclass(frozen=True)
class KeywordMatchResult(Record):
    """``keyword_match`` (method 11): score = how many query terms a node's name, type or
    properties contain (SQL LIKE)."""

    query: str
    terms: tuple[str, ...]
    results: tuple[KeywordHit, ...]


@dataclass(frozen=True)
class BoostResult(Record):
    """``edge_type_boost`` (method 12): normalised boost per node, best first."""

    seeds: tuple[str, ...]
    boost_types: tuple[str, ...] | None
    scores: tuple[tuple[NodeRef, float], ...]

    def as_dict(self) -> dict[str, float]:
        """spec/000's return shape, ``{node_id: normalised_boost}``."""
        return {n.id: s for n, s in self.scores}

    def to_dict(self) -> dict[str, Any]:
        return {"seeds": list(self.seeds), "boost_types": list(self.boost_types) if self.boost_types else None,
                "scores": [{"node": n.to_dict(), "boost": jsonable(s)} for n, s in self.scores]}


# -- method 7 and the dimension catalog ------------------------------------------------------------------------------
@dataclass(frozen=True)
class DimensionMatch(Record):
    node: NodeRef
    values: dict[str, float]


@dataclass(frozen=True)
class DimensionFilterResult(Record):
    """``dimension_filter`` (method 7): ``total`` matches in all, the first ``limit`` listed."""

    filters: dict[str, dict[str, float]]
    total: int
    results: tuple[DimensionMatch, ...]
    custom_dimensions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DimensionValue(Record):
    name: str
    value: float
    category: str | None
    inferred: str | None = None  # the rule that inferred it, None when a person set it


@dataclass(frozen=True)
class NodeDimensions(Record):
    node: NodeRef
    values: tuple[DimensionValue, ...]


@dataclass(frozen=True)
class InferredValue(Record):
    node: str
    dimension: str
    value: float
    rule: str
    previous: float | None = None


@dataclass(frozen=True)
class AutoDimensionsReport(Record):
    """``dims auto``: values inferred by the rules, what was skipped because a person set it."""

    nodes: int
    inferred: tuple[InferredValue, ...]
    kept_human: int
    nodes_written: int
    dry_run: bool
    rules: tuple[str, ...]


# -- analytics ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RankedNode(Record):
    rank: int
    node: NodeRef
    score: float
    degree: int = 0
    betweenness: float = 0.0
    pagerank: float = 0.0
    articulation: bool = False


@dataclass(frozen=True)
class CentralityReport(Record):
    """A ranking by degree, betweenness, pagerank or their combination; ``method`` says how
    betweenness was computed (exact, or sampled on large graphs)."""

    metric: str
    method: str
    results: tuple[RankedNode, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Community(Record):
    id: int
    size: int
    top: tuple[NodeRef, ...]
    node_types: dict[str, int]
    internal_edges: int
    external_edges: int


@dataclass(frozen=True)
class CommunityReport(Record):
    count: int
    modularity: float
    communities: tuple[Community, ...]


@dataclass(frozen=True)
class GapReport(Record):
    """Orphans, small components, limitations with no workaround, and nodes of actionable types with
    no semantic dimension (what the KG is missing)."""

    orphans: tuple[NodeRef, ...]
    orphan_count: int
    components: int
    small_components: tuple[tuple[NodeRef, ...], ...]
    unmitigated_limitations: tuple[NodeRef, ...]
    without_dimensions: tuple[NodeRef, ...]
    without_dimensions_count: int
    without_description_count: int


# -- method 1: intent_search ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ResultEdge(Record):
    source: str
    target: str
    type: str
    source_name: str = ""
    target_name: str = ""


@dataclass(frozen=True)
class IntentHit(Record):
    """A ranked node: the hybrid search's components plus each routed method's score for it."""

    rank: int
    node: NodeRef
    score: float
    components: dict[str, float]
    method_scores: dict[str, float]
    method: str
    edge_annotations: tuple[ResultEdge, ...] = ()


@dataclass(frozen=True)
class IntentSearchResult(Record):
    query: str
    intent: IntentMatch | None
    intents: tuple[IntentMatch, ...]
    retrieval_intent: str
    routes: tuple[str, ...]
    weights: dict[str, float]
    nodes: tuple[IntentHit, ...]
    edges: tuple[ResultEdge, ...]
    composition: CompositionPlan | None = None
    capability: CapabilityResult | None = None
    goal: WantToResult | None = None
    impact: ImpactResult | None = None
    similar: SimilarResult | None = None
    exploration: ExplorationTree | None = None
    took_ms: float = 0.0
    alternatives: AlternativesResult | None = None  # reasoning's route
    blockers: BlockerReport | None = None  # coding_help's route (why_not)
    notes: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())  # the hybrid search's (e.g. no vectors)
