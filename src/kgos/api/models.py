"""Pydantic models of the /api/kg and /api/kgos routes: request bodies (validated before any library
call: bounded counts, finite non-negative weights, non-blank text) and response shapes (mirroring
the library's ``to_dict()`` documents, so ``/openapi.json`` describes what the routes really send).

Request models forbid unknown keys, so a typo (``"limt"``) is a 422 naming it, not a silent default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..methods.compose import MAX_TOOLS_CAP
from ..methods.view import MAX_DEPTH
from ..retrieval.hybrid import MAX_K, MODES
from ..retrieval.intents import INTENTS
from ..kg import check_db_id

MAX_TEXT = 10_000  # characters of a query, goal or capability
MAX_REF = 2_000  # characters of a node id or name


def nonblank(what: str) -> Callable[[str], str]:
    """A validator refusing text that is only whitespace, naming what is missing."""
    def check(value: str) -> str:
        if not value.strip():
            raise ValueError(f"the {what} is empty: describe it in a few words")
        return value
    return check


def text(what: str, example: str) -> Any:
    """A required, non-blank string of at most MAX_TEXT characters (a query, goal, capability...)."""
    return Annotated[str, Field(min_length=1, max_length=MAX_TEXT, examples=[example]), AfterValidator(nonblank(what))]


Query = text("query", "How do I reduce API costs?")
Goal = text("goal", "read CSV data, analyze trends and generate a report")
NodeRefIn = Annotated[str, Field(min_length=1, max_length=MAX_REF, description="A node id or an unambiguous name",
                                 examples=["feature:prompt_caching"]), AfterValidator(nonblank("node reference"))]
Name = Annotated[str, Field(min_length=1, max_length=MAX_REF), AfterValidator(nonblank("name"))]
DbIdIn = Annotated[str, Field(min_length=1, max_length=64, examples=["demo"],
                              description="1-64 lowercase letters, digits, '-' or '_'"), AfterValidator(check_db_id)]
K = Annotated[int, Field(ge=1, le=MAX_K)]
Depth = Annotated[int, Field(ge=1, le=MAX_DEPTH)]
Weight = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Properties = dict[str, Any]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- weights --------------------------------------------------------------------------------------
class WeightsIn(Strict):
    """Explicit weights of the four signals, normalised to sum 1; missing ones are 0. A list of four
    numbers ``[alpha, beta, gamma, delta]`` is accepted too."""

    alpha: Weight = Field(0.0, description="embedding similarity")
    beta: Weight = Field(0.0, description="text (BM25 / FTS5)")
    gamma: Weight = Field(0.0, description="graph proximity")
    delta: Weight = Field(0.0, description="intent edges")

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            if len(value) != 4:
                raise ValueError("weights must be four numbers [alpha, beta, gamma, delta] or an object "
                                 "{alpha, beta, gamma, delta}")
            return dict(zip(("alpha", "beta", "gamma", "delta"), value, strict=True))
        return value

    @model_validator(mode="after")
    def _positive(self) -> WeightsIn:
        if self.alpha + self.beta + self.gamma + self.delta <= 0:
            raise ValueError("at least one weight must be positive")
        return self

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.alpha, self.beta, self.gamma, self.delta)


WeightsArg = WeightsIn | None


def weights_arg(weights: WeightsIn | None) -> tuple[float, ...] | None:
    """The library's form of a request's weights: a 4-tuple, or None for the intent's profile."""
    return None if weights is None else weights.as_tuple()


Constraint = dict[Literal["min", "max", "exact", "gt", "lt"], Finite]
DimensionFilters = Annotated[dict[str, Constraint], Field(description="{dimension: {min|max|exact|gt|lt: value}}")]


# -- requests: KGs, nodes, edges -------------------------------------------------------------------
class KGCreate(Strict):
    db_id: DbIdIn
    name: str | None = Field(None, max_length=MAX_REF)
    description: str = Field("", max_length=100_000)


class NodeCreate(Strict):
    name: Name
    type: Name = "entity"
    description: str = Field("", max_length=1_000_000)
    properties: Properties = Field(default_factory=dict)
    id: str | None = Field(None, min_length=1, max_length=MAX_REF, description="Default: <type>:<slug of name>")


class NodeUpsert(Strict):
    name: Name
    type: Name = "entity"
    description: str = Field("", max_length=1_000_000)
    properties: Properties = Field(default_factory=dict)


class NodePatch(Strict):
    name: Name | None = None
    type: Name | None = None
    description: str | None = Field(None, max_length=1_000_000)
    properties: Properties | None = None
    replace_properties: bool = Field(False, description="Replace the properties instead of merging them")


class EdgeCreate(Strict):
    source: Name
    target: Name
    type: Name
    weight: Finite = 1.0
    properties: Properties = Field(default_factory=dict)


class DimensionsSet(Strict):
    values: dict[str, Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]] = Field(min_length=1)
    custom: bool = Field(False, description="Allow names outside the 56-dimension catalog")


class DimensionsInfer(Strict):
    dims: list[str] | None = Field(None, max_length=100, description="Only these dimensions' rules")
    dry_run: bool = False


# -- requests: search and query methods ------------------------------------------------------------
Intent = Literal[INTENTS]  # type: ignore[valid-type]
Mode = Literal[MODES]  # type: ignore[valid-type]
Route = Literal["can_it", "compose_for", "want_to", "impact_analysis", "similar_to", "explore_smart"]


class SearchIn(Strict):
    query: Query
    k: K = 10
    weights: WeightsArg = None
    intent: Intent | None = Field(None, description="Force a retrieval intent (default: classified)")
    mode: Mode = "hybrid"
    explain: bool = Field(True, description="Include each hit's signal components and edge annotations")
    filters: DimensionFilters | None = Field(None, description="Dimension pre-filter: only nodes meeting every "
                                             "constraint are scored, e.g. {\"pricing_tier\": {\"max\": 0.3}}")


class MultiSearchIn(SearchIn):
    db_ids: list[DbIdIn] = Field(min_length=1, max_length=64)


class RetrievalConfigIn(Strict):
    """``intent_search``'s config (``kgos.methods.RetrievalConfig``)."""

    k: K = 10
    weights: WeightsArg = None
    intent: Intent | None = None
    method_weight: float = Field(0.4, ge=0.0, le=1.0)
    methods: list[Route] | None = Field(None, description="Routes to run (default: as classified)")
    dimension_filters: DimensionFilters | None = None
    expand_top: int = Field(3, ge=0, le=100)
    expand_edges: int = Field(5, ge=0, le=100)
    max_depth: Depth = 2


class IntentSearchIn(Strict):
    query: Query
    config: RetrievalConfigIn = Field(default_factory=RetrievalConfigIn)


class GoalIn(Strict):
    goal: Goal
    k: K = 10


class CapabilityIn(Strict):
    capability: text("capability", "can it stream responses?")  # type: ignore[valid-type]


class ComposeIn(Strict):
    goal: Goal
    max_tools: int = Field(5, ge=1, le=MAX_TOOLS_CAP)


class NodeK(Strict):
    node: NodeRefIn
    k: K = 10


class NodeOnly(Strict):
    node: NodeRefIn


class ImpactIn(Strict):
    node: NodeRefIn
    direction: Literal["forward", "backward", "both"] = "both"
    max_depth: Depth = 3
    per_depth: K = 20


class TraceIn(Strict):
    source: NodeRefIn
    target: NodeRefIn
    max_depth: Depth = 5


class ExploreIn(Strict):
    node: NodeRefIn
    depth: Depth = 2
    per_level: K = 15


class KeywordIn(Strict):
    query: Query
    limit: K = 20


class BoostIn(Strict):
    seeds: list[NodeRefIn] = Field(min_length=1, max_length=100)
    boost_types: list[Name] | None = None
    limit: K = 50


class DimensionFilterIn(Strict):
    filters: DimensionFilters = Field(min_length=1)
    limit: K = 20


# -- requests: /api/kgos (spec/000 section 10) ------------------------------------------------------
SpecMethod = Literal["hybrid", "intent", "can_it", "compose_for", "want_to", "impact_analysis", "similar_to",
                     "explore_smart"]


class SpecConfig(Strict):
    """spec/000's retrieval config: alpha..delta (all four absent: the intent's profile), limit, methods
    (``hybrid`` = search only, ``intent`` = route as classified, or named query methods)."""

    alpha: Weight | None = None
    beta: Weight | None = None
    gamma: Weight | None = None
    delta: Weight | None = None
    limit: K = 10
    methods: list[SpecMethod] | None = None
    intent: Intent | None = None
    method_weight: float = Field(0.4, ge=0.0, le=1.0)
    dimension_filters: DimensionFilters | None = None
    max_depth: Depth = 2

    @model_validator(mode="after")
    def _positive(self) -> SpecConfig:
        given = [w for w in (self.alpha, self.beta, self.gamma, self.delta) if w is not None]
        if given and sum(given) <= 0:
            raise ValueError("at least one weight must be positive")
        return self


class SpecQueryIn(Strict):
    query: Query
    config: SpecConfig = Field(default_factory=SpecConfig)


class SpecImpactIn(Strict):
    direction: Literal["forward", "backward", "both"] = "forward"
    max_depth: Depth = 3


class SpecComposeIn(Strict):
    goal: Goal
    max_tools: int = Field(5, ge=1, le=MAX_TOOLS_CAP)


class SpecSimilarIn(Strict):
    k: K = 10


# -- responses: errors ---------------------------------------------------------------------------------
class FieldError(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every error: ``detail`` says what was wrong and what to do, ``error`` names its kind."""

    detail: str
    error: str
    suggestions: list[str] | None = Field(None, description="Close node ids, for an unknown node")
    candidates: list[str] | None = Field(None, description="Node ids an ambiguous name matches")
    record: str | None = Field(None, description="The offending record of a failed import")
    errors: list[FieldError] | None = Field(None, description="Each invalid field, for a 422")


# -- responses: graph values ------------------------------------------------------------------------
class NodeRef(BaseModel):
    id: str
    name: str
    type: str
    description: str | None = None


class NodeOut(BaseModel):
    id: str
    name: str
    type: str
    description: str
    properties: Properties


class NodeDetail(NodeOut):
    created_at: str | None
    updated_at: str | None


class EdgeOut(BaseModel):
    source: str
    target: str
    type: str
    weight: float
    properties: Properties
    id: str | None = None


class NeighborOut(BaseModel):
    node: NodeOut
    edge: EdgeOut
    direction: Literal["outgoing", "incoming"]


class NeighborsOut(BaseModel):
    node: NodeOut
    direction: str
    neighbors: list[NeighborOut]


class NodePage(BaseModel):
    total: int
    limit: int
    offset: int
    nodes: list[NodeOut]


class EdgePage(BaseModel):
    limit: int
    offset: int
    edges: list[EdgeOut]


class NodeDeleted(BaseModel):
    deleted: str
    edges_removed: int


class EdgeDeleted(BaseModel):
    deleted: bool
    source: str
    target: str
    type: str


# -- responses: KGs -----------------------------------------------------------------------------------------
class KGInfoOut(BaseModel):
    db_id: str
    kind: Literal["native", "attached"]
    path: str
    profile: str
    read_only: bool
    name: str
    description: str
    nodes: int
    edges: int


class DegreeSummaryOut(BaseModel):
    min: int
    max: int
    mean: float
    median: float
    p90: float
    p99: float


class KGStatsOut(BaseModel):
    db_id: str
    nodes: int
    edges: int
    node_types: dict[str, int]
    edge_types: dict[str, int]
    in_degree: DegreeSummaryOut
    out_degree: DegreeSummaryOut
    total_degree: DegreeSummaryOut
    orphans: int
    self_loops: int
    components: int
    largest_component: int
    density: float


class KGDetail(KGInfoOut):
    stats: KGStatsOut


class KGDeleted(BaseModel):
    db_id: str
    result: Literal["deleted", "detached"]


class IssueOut(BaseModel):
    rule: int
    severity: str
    title: str
    count: int
    examples: list[str]


class RuleOut(BaseModel):
    rule: int
    severity: str
    check: str
    passed: bool
    count: int


class ValidationOut(BaseModel):
    db_id: str
    ok: bool
    errors: int
    warnings: int
    infos: int
    nodes: int
    edges: int
    issues: list[IssueOut]
    rules: list[RuleOut]


class ImportOut(BaseModel):
    db_id: str
    format: str
    mode: str
    nodes: int
    edges: int
    skipped_dangling: int
    duplicate_edges: int
    seconds: float


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    kgs: int


# -- responses: search ---------------------------------------------------------------------------------
class SearchIntent(BaseModel):
    category: str
    score: float
    source: str


class WeightsOut(BaseModel):
    alpha: float
    beta: float
    gamma: float
    delta: float
    source: str


class Components(BaseModel):
    embedding: float
    text: float
    graph: float
    intent: float


class EdgeAnnotation(BaseModel):
    source: str
    target: str
    type: str
    direction: str
    other: str
    other_name: str


class SearchHit(BaseModel):
    rank: int
    node: NodeOut
    score: float
    method: str
    components: Components | None = Field(None, description="null when explain is false")
    edge_annotations: list[EdgeAnnotation] | None = Field(None, description="null when explain is false")
    source_kg: str | None = None
    diversity_bonus: float = Field(0.0, description="Included in score: +5% for the first hit of a community")
    missing_signals: list[str] = Field([], description="Signals the node lacks (no vector yet): weights spread "
                                       "over its other signals")


class SearchOut(BaseModel):
    query: str
    kg: str | None
    mode: str
    intent: SearchIntent
    weights: WeightsOut
    results: list[SearchHit]
    took_ms: float
    notes: list[str]
    warnings: list[str] = Field([], description="Why this ranking is weaker than it could be (e.g. no vectors)")


# -- responses: query methods ------------------------------------------------------------------------------
class IntentMatch(BaseModel):
    category: str
    score: float
    phrases: list[str]
    keywords: list[str]


class Classification(BaseModel):
    query: str
    intent: IntentMatch | None
    intents: list[IntentMatch]
    retrieval_intent: str
    routes: list[str]


class PathElement(BaseModel):
    """One element of a path: a node (``node``, ``name``, ``type``) or the edge between two nodes
    (``edge``, ``direction``), alternating (spec/000 method 9)."""

    node: str | None = None
    name: str | None = None
    type: str | None = None
    edge: str | None = None
    direction: str | None = None


class PathOut(BaseModel):
    found: bool
    length: int | None
    source: NodeRef
    target: NodeRef
    max_depth: int
    path: list[PathElement]
    notes: list[str]


class GoalHit(BaseModel):
    node: NodeRef
    score: float
    text_score: float
    graph_score: float
    path: list[PathElement]


class WantToOut(BaseModel):
    goal: str
    keywords: list[str]
    intent_keywords: list[str]
    results: list[GoalHit]
    notes: list[str]


class LimitationOut(BaseModel):
    node: NodeRef
    workarounds: list[NodeRef]
    blocking: bool


class CandidateStatus(BaseModel):
    node: NodeRef
    status: str
    score: float


class CapabilityOut(BaseModel):
    query: str
    capability: str
    status: Literal["yes", "yes_with_limitations", "no", "unknown"]
    node: NodeRef | None
    match_score: float
    limitations: list[LimitationOut]
    workarounds: list[NodeRef]
    prerequisites: list[NodeRef]
    candidates: list[CandidateStatus]
    explanation: str
    notes: list[str]


class BlockedPrerequisite(BaseModel):
    node: NodeRef
    depth: int
    blocking_limitations: list[NodeRef]


class WhyNotOut(BaseModel):
    node: NodeRef
    status: str
    limitations: list[LimitationOut]
    workarounds: list[NodeRef]
    prerequisites: list[BlockedPrerequisite]
    conflicts: list[NodeRef]
    alternatives: list[NodeRef]
    reasons: list[str]


class PlanStep(BaseModel):
    index: int
    sub_goal: str
    node: NodeRef
    score: float
    candidates: list[NodeRef]


class PlanEdge(BaseModel):
    source: str
    target: str
    type: str
    status: str
    via: list[str]


class PrerequisiteOut(BaseModel):
    node: NodeRef
    needed_by: list[str]
    depth: int


class AlternativeOut(BaseModel):
    for_step: str
    node: NodeRef
    reason: str


class CompositionOut(BaseModel):
    goal: str
    sub_goals: list[str]
    steps: list[PlanStep]
    edges: list[PlanEdge]
    prerequisites: list[PrerequisiteOut]
    conflicts: list[PlanEdge]
    warnings: list[str]
    alternatives: list[AlternativeOut]
    valid: bool
    notes: list[str]


class SimilarRow(BaseModel):
    node: NodeRef
    score: float
    jaccard: float
    type_match: float
    name_overlap: float


class SimilarOut(BaseModel):
    node: NodeRef
    results: list[SimilarRow]


class ExplicitAlternative(BaseModel):
    node: NodeRef
    edge_type: str
    direction: str


class AlternativesOut(BaseModel):
    node: NodeRef
    explicit: list[ExplicitAlternative]
    structural: list[SimilarRow]
    conflicts: list[NodeRef]


class ImpactedNode(BaseModel):
    node: NodeRef
    depth: int
    risk: float
    parent: str
    edge_type: str
    direction: str
    weight: float
    criticality: float


class ImpactOut(BaseModel):
    node: NodeRef
    direction: str
    max_depth: int
    total_impacted: int
    counts_by_depth: dict[str, int]
    risk_by_depth: dict[str, list[ImpactedNode]]
    critical_path: list[NodeRef]
    edge_types_traversed: dict[str, int]
    truncated: bool
    notes: list[str]


class ExploredNode(BaseModel):
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


class ExplorationLevel(BaseModel):
    depth: int
    count: int
    mean_degree: float
    nodes: list[ExploredNode]


class ExplorationOut(BaseModel):
    root: NodeRef
    depth: int
    levels: list[ExplorationLevel]
    hubs: list[NodeRef]
    truncated: bool
    notes: list[str]


class KeywordHit(BaseModel):
    node: NodeRef
    score: int
    terms: list[str]


class KeywordOut(BaseModel):
    query: str
    terms: list[str]
    results: list[KeywordHit]


class BoostScore(BaseModel):
    node: NodeRef
    boost: float


class BoostOut(BaseModel):
    seeds: list[str]
    boost_types: list[str] | None
    scores: list[BoostScore]


class DimensionMatch(BaseModel):
    node: NodeRef
    values: dict[str, float]


class DimensionFilterOut(BaseModel):
    filters: dict[str, dict[str, float]]
    total: int
    results: list[DimensionMatch]
    custom_dimensions: list[str]
    notes: list[str]


class DimensionValue(BaseModel):
    name: str
    value: float
    category: str | None
    inferred: str | None


class NodeDimensionsOut(BaseModel):
    node: NodeRef
    values: list[DimensionValue]


class InferredValue(BaseModel):
    node: str
    dimension: str
    value: float
    rule: str
    previous: float | None


class InferOut(BaseModel):
    nodes: int
    inferred: list[InferredValue]
    kept_human: int
    nodes_written: int
    dry_run: bool
    rules: list[str]


class RankedNode(BaseModel):
    rank: int
    node: NodeRef
    score: float
    degree: int
    betweenness: float
    pagerank: float
    articulation: bool


class CentralityOut(BaseModel):
    metric: str
    method: str
    results: list[RankedNode]
    notes: list[str]


class CommunityOut(BaseModel):
    id: int
    size: int
    top: list[NodeRef]
    node_types: dict[str, int]
    internal_edges: int
    external_edges: int


class CommunitiesOut(BaseModel):
    count: int
    modularity: float
    communities: list[CommunityOut]


class GapsOut(BaseModel):
    orphans: list[NodeRef]
    orphan_count: int
    components: int
    small_components: list[list[NodeRef]]
    unmitigated_limitations: list[NodeRef]
    without_dimensions: list[NodeRef]
    without_dimensions_count: int
    without_description_count: int


class ResultEdge(BaseModel):
    source: str
    target: str
    type: str
    source_name: str
    target_name: str


class IntentHit(BaseModel):
    rank: int
    node: NodeRef
    score: float
    components: Components
    method_scores: dict[str, float]
    method: str
    edge_annotations: list[ResultEdge]


class IntentSearchOut(BaseModel):
    query: str
    intent: IntentMatch | None
    intents: list[IntentMatch]
    retrieval_intent: str
    routes: list[str]
    weights: dict[str, float]
    nodes: list[IntentHit]
    edges: list[ResultEdge]
    composition: CompositionOut | None
    capability: CapabilityOut | None
    goal: WantToOut | None
    impact: ImpactOut | None
    similar: SimilarOut | None
    exploration: ExplorationOut | None
    took_ms: float
    notes: list[str]
    warnings: list[str] = []


# -- responses: /api/kgos (spec/000 section 10) ------------------------------------------------------------
class SpecIntent(BaseModel):
    category: str
    score: float


class SpecNode(BaseModel):
    id: str
    name: str
    type: str
    description: str | None = None
    properties: Properties


class SpecHit(BaseModel):
    node: SpecNode
    score: float
    method: str
    edge_annotations: list[ResultEdge]
    components: Components
    method_scores: dict[str, float]
    rank: int


class SpecQueryOut(BaseModel):
    intent: SpecIntent | None
    results: list[SpecHit]
    total: int
    query: str
    composition_plan: CompositionOut | None
    intents: list[IntentMatch]
    retrieval_intent: str
    routes: list[str]
    weights: dict[str, float]
    edges: list[ResultEdge]
    capability: CapabilityOut | None
    goal: WantToOut | None
    impact: ImpactOut | None
    similar: SimilarOut | None
    exploration: ExplorationOut | None
    took_ms: float
    notes: list[str]


class SpecRisk(BaseModel):
    node: NodeRef
    risk: float
    depth: int
    parent: str
    edge_type: str
    direction: str
    weight: float
    criticality: float


class SpecImpactOut(BaseModel):
    node_id: str
    node: NodeRef
    direction: str
    max_depth: int
    total_impacted: int
    counts_by_depth: dict[str, int]
    risk_by_depth: dict[str, list[SpecRisk]]
    critical_path: list[str]
    critical_path_nodes: list[NodeRef]
    edge_types_traversed: dict[str, int]
    truncated: bool
    notes: list[str]


class SpecStep(BaseModel):
    order: int
    tool: str
    action: str
    node_id: str
    node: NodeRef
    score: float
    candidates: list[NodeRef]


class SpecPlanEdge(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    type: str
    validated: bool
    status: str
    source: str
    target: str
    via: list[str]


class SpecComposeOut(BaseModel):
    goal: str
    steps: list[SpecStep]
    edges: list[SpecPlanEdge]
    prerequisites: list[PrerequisiteOut]
    warnings: list[str]
    is_valid: bool
    sub_goals: list[str]
    conflicts: list[PlanEdge]
    alternatives: list[AlternativeOut]
    notes: list[str]


class SpecSimilarRow(BaseModel):
    node: NodeRef
    score: float
    jaccard: float
    type_match: float
    name_overlap: float


class SpecSimilarOut(BaseModel):
    source_node: NodeRef
    similar: list[SpecSimilarRow]


class DimensionOut(BaseModel):
    name: str
    category: str
    description: str
    low_description: str
    high_description: str
    range: tuple[float, float]


class DimensionsOut(BaseModel):
    dimensions: list[DimensionOut]
    total: int
    categories: dict[str, int]

